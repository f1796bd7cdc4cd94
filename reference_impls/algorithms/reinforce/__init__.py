"""REINFORCE-style policy gradients without a critic (RLOO)."""
