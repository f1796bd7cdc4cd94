"""The hostile programs of the code environment's tests: each sandboxed environment that runs model-written code
(code, code-refine, mle, ctf) must contain them: the episode ends or goes on with a clear observation, and the
trainer's process is unharmed."""

HOSTILE_PROGRAMS = [
    "while True:\n    pass",                  # CPU forever
    "import os\nos.kill(os.getppid(), 9)",    # kill the parent
    "import os\nwhile True:\n    os.fork()",  # fork bomb
    "x = ' ' * 10**10",                       # memory bomb
    "print('x' * 10**7)",                     # output flood
]
