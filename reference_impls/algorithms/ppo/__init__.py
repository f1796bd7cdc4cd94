"""PPO with a learned critic (GAE), and its variants."""
