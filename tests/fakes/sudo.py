"""A fake sudo for the pexpect driver's tests: ``sudo.py [-n] [-p PROMPT] [COMMAND...]``.

Like sudo it talks to /dev/tty, not stdin. It turns echo ON, prints the prompt, and turns echo
off only after FAKE_SUDO_ECHO_DELAY_MS (default 200): a reply sent too early is echoed back
into the output (T25). It accepts only the password in FAKE_SUDO_PASSWORD, allows 3 tries
("Sorry, try again.", T26), and with -n fails at once: "sudo: a password is required". With
FAKE_SUDO_MODE=not-in-sudoers the right password is still refused. Then it runs COMMAND, or
prints "authenticated".
"""

from __future__ import annotations

import os
import sys
import termios
import time

TRIES = 3


def read_password(tty: int, prompt: str, echo_delay_s: float) -> str:
    saved = termios.tcgetattr(tty)
    loud = termios.tcgetattr(tty)
    loud[3] |= termios.ECHO
    quiet = termios.tcgetattr(tty)
    quiet[3] &= ~termios.ECHO
    try:
        termios.tcsetattr(tty, termios.TCSANOW, loud)
        os.write(tty, prompt.encode())
        time.sleep(echo_delay_s)
        # TCSANOW, not TCSAFLUSH: a reply that came too early stays readable, and was echoed.
        termios.tcsetattr(tty, termios.TCSANOW, quiet)
        line = b""
        while not line.endswith(b"\n"):
            chunk = os.read(tty, 4096)
            if not chunk:
                break
            line += chunk
    finally:
        termios.tcsetattr(tty, termios.TCSANOW, saved)
    os.write(tty, b"\n")
    return line.rstrip(b"\n").decode("utf-8", errors="replace")


def authenticate(tty: int, prompt: str) -> bool:
    expected = os.environ.get("FAKE_SUDO_PASSWORD", "")
    delay_s = int(os.environ.get("FAKE_SUDO_ECHO_DELAY_MS", "200")) / 1000
    for attempt in range(TRIES):
        if read_password(tty, prompt, delay_s) == expected:
            return True
        if attempt < TRIES - 1:
            os.write(tty, b"Sorry, try again.\n")
    os.write(tty, f"sudo: {TRIES} incorrect password attempts\n".encode())
    return False


def main(args: list[str]) -> int:
    prompt, non_interactive = "[sudo] password for user: ", False
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag == "-n":
            non_interactive = True
        elif flag == "-p":
            prompt = args.pop(0)
    if non_interactive:
        sys.stderr.write("sudo: a password is required\n")
        return 1
    tty = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    if not authenticate(tty, prompt):
        return 1
    if os.environ.get("FAKE_SUDO_MODE") == "not-in-sudoers":
        os.write(tty, b"user is not in the sudoers file.  This incident will be reported.\n")
        return 1
    if args:
        os.execvp(args[0], args)
    os.write(tty, b"authenticated\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
