"""The Textual screens of the wizard, one per stage (screens/).

Screens show state and send intents; they never run commands, read the machine or choose
versions (import contract: no pexpect, subprocess, pynvml or wizard/machine/host.py here).
"""
