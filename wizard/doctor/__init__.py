"""The doctor: diagnose the guide's common problems and the field's known errors.

``diagnose`` reads the machine (through the Host door) and the wizard's state directory, runs
pure checks over what it read, and returns a ``Report`` of findings; ``report`` renders it as
text or JSON; ``bundle`` writes a redacted support archive. This package file imports nothing,
so a screen can import the pure ``findings`` module without the readers behind it.
"""
