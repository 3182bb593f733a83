"""The front ends: the ``gpuwizard`` command line (cli, cliargs, the bench, export and doctor
commands), ``apply`` (headless), and the Textual app with its stage views over screens/.

They parse, print, show and answer; every decision about where the setup goes is the setup
core's (wizard/setup/). Nothing else in gpuwizard may import them.
"""
