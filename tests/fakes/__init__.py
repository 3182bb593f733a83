"""Fake programs the runner's tests spawn: small standalone scripts run with sys.executable.

Each takes its behaviour from argv and writes through sys.stdout.buffer, as raw as a real
installer's output. Nothing here is imported by the wizard.
"""
