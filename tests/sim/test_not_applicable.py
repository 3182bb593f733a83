"""The fault cases of reliability.md §9 with no end-to-end test on the simulated host, and why.

Every other case T01-T38 has a test in tests/sim named after it (``test_t07_...``). These do not
apply to the runner and the simulation as built, or are fully covered at a lower level where an
end-to-end version would add nothing:

- T23 (c) nvidia-smi missing and (d) nvidia-smi hanging for 60 s: gpuwizard never runs nvidia-smi.
  Detection asks NVML through pynvml (gpuwizard.machine.detect.nvml), where a missing driver library is
  the fact "no NVIDIA driver is installed" that every fresh-install test starts from; a command
  that hangs is T30. (a) the library mismatch and (b) the driver not loaded, with its cause, are
  tested in test_faults_reboot.py (T23, T04, T18, T21).
- T26 wrong sudo password, not in sudoers, ``sudo -n``: the runner runs as root and never drives
  sudo (ARCHITECTURE X1; ``gpuwizard apply`` refuses to start unless root). The pty driver's
  handling of a fake sudo is tested in tests/runner/test_pty.py.
- T27's first half (a sudo prompt mid-step) never happens for the same reason; its second half,
  a "Password:" line in apt's output, is test_t27 in test_faults_apt.py.
- T30 a child that hangs silently: the silence watchdogs in the plan are 5-30 minutes, and no
  step's timeout can be shortened from outside without a test-only knob in the product. The
  watchdog, the process-group kill and the report are tested on the pty driver in
  tests/runner/test_pty.py; what the runner does with the failed action is the same as T31's.
- T32 window size and a missing working directory: a plan's command has no working directory,
  and the 200-column pty and the cwd check are properties of the pty driver, tested in
  tests/runner/test_pty.py.
- T36 and T37 are tested where the values meet YAML and shell: the exporters
  (tests/export/test_bash_hostile.py ``test_t36_*`` runs deploy.sh with the fault case's values
  under fake tools; tests/export/test_answers.py ``test_t37_*``), and hostile environment names
  refused before anything is planned (test_t36 in test_faults_state.py). The runner itself never
  goes through a shell and writes no YAML (the journal, events and facts are JSON).
- T09, T10 and T28 name the TUI: here the front end is ``gpuwizard apply``, which shares the
  launcher, run record, lock and event follower with it (test_t09, test_t10, test_t28); the TUI's
  own responsiveness under a flood belongs to its Pilot tests in tests/ui.
"""
