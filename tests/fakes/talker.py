"""A fake installer for the pexpect driver's tests: ``talker.py MODE [ARGS...]``.

Each mode reproduces one behaviour of a real command (a flood, a hung prompt, bad bytes, a death
by signal, a grandchild left behind). It writes raw bytes through sys.stdout.buffer and flushes
after every write, so what the driver reads is what a real program would send.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable

OUT = sys.stdout.buffer
CONFFILE_PROMPT = "*** grub (Y/I/N/O/D/Z) [default=N] ? "
FLOOD_LINE_BYTES = 100  # "%09d " + 89 x "x" + "\n"


def say(data: bytes | str, pause_s: float = 0.0) -> None:
    OUT.write(data.encode() if isinstance(data, str) else data)
    OUT.flush()
    if pause_s:
        time.sleep(pause_s)


def lines(count: str) -> None:
    say("".join(f"line {i}\n" for i in range(int(count))))


def lines_then_sleep(seconds: str) -> None:
    say("first line\n", float(seconds))
    say("done\n")


def prompt_then_read(times: str = "1") -> None:
    """Asks, reads one reply per prompt, then fails if a reply arrives that nobody asked for."""
    for _ in range(int(times)):
        say("Continue? [y/N] ")
        say(f"got {sys.stdin.readline().strip()!r}\n")
    if select.select([sys.stdin], [], [], 0.3)[0]:
        say(f"extra input {sys.stdin.readline()!r}\n")
        sys.exit(3)


def conffile_prompt() -> None:
    """dpkg's conffile question, read from stdin (T17)."""
    say(
        "Configuration file '/etc/default/grub'\n ==> Modified (by you or by a script) since installation.\n"
    )
    say(CONFFILE_PROMPT)
    reply = sys.stdin.readline()
    if not reply:
        say(
            "\ndpkg: error processing package grub (--configure): end of file on stdin at conffile prompt\n"
        )
        sys.exit(1)
    say(f"answered {reply.strip()!r}\n")


def silent(seconds: str) -> None:
    """Prints a prompt, then nothing at all (a hung prompt or a network stall, T30)."""
    say(CONFFILE_PROMPT, float(seconds))


def grandchild(seconds: str = "3600") -> None:
    """Leaves a `sleep` grandchild in the process group, immune to SIGHUP, then goes silent."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # inherited through exec by the grandchild
    sleeper = subprocess.Popen(["sleep", seconds])
    say(f"child {os.getpid()}\ngrandchild {sleeper.pid}\n")
    say(CONFFILE_PROMPT, float(seconds))


def ignore_term() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    say(f"child {os.getpid()}\nignoring SIGTERM\n", 3600)


def tick() -> None:
    for i in range(100_000):
        say(f"tick {i}\n", 0.1)


def sigkill() -> None:
    say("about to die\n")
    os.kill(os.getpid(), signal.SIGKILL)


def exit_with(code: str) -> None:
    say(f"exiting with {code}\n")
    sys.exit(int(code))


def winsize() -> None:
    size = os.get_terminal_size(sys.stdout.fileno())
    say(f"columns={size.columns} lines={size.lines}\n")


def environment() -> None:
    say("".join(f"{name}\n" for name in sorted(os.environ)))


def bad_bytes() -> None:
    """T29: invalid UTF-8, a character split across two writes, CR progress, ANSI, NUL."""
    say(b"bad:\xff\xfe:end\n", 0.2)
    say(b"split:\xc3", 0.2)
    say(b"\xbc:end\n", 0.2)
    say(b"10%\r50%\r100%\n")
    say(b"\x1b[31mred\x1b[0m plain \x1b]0;title\x07done\n")
    say(b"nul:a\x00b\n")


def echo_password() -> None:
    """Reads a secret from stdin and prints it back, in two writes split mid-secret (T25)."""
    say("Secret: ")
    secret = sys.stdin.buffer.readline().rstrip(b"\n")
    half = len(secret) // 2
    say(b"\nyou typed: " + secret[:half], 0.2)
    say(secret[half:] + b" (that was it)\n")


def password_in_output() -> None:
    """apt-like output that contains a generic "Password:" (T27): not a prompt for us."""
    say("Reading package lists...\nPassword: ", 0.3)
    say("\nSetting up foo (1.0) ...\n")


def flood(megabytes: str, long_megabytes: str = "0") -> None:
    """Lines of 100 bytes as fast as possible, then one long line without a newline (T28)."""
    count = int(float(megabytes) * 1_000_000) // FLOOD_LINE_BYTES
    pad = b"x" * (FLOOD_LINE_BYTES - 11)
    for start in range(0, count, 1000):
        OUT.write(b"".join(b"%09d %s\n" % (i, pad) for i in range(start, min(start + 1000, count))))
    OUT.write(b"y" * int(float(long_megabytes) * 1_000_000))
    OUT.flush()


MODES: dict[str, Callable[..., None]] = {
    "lines": lines,
    "lines-then-sleep": lines_then_sleep,
    "prompt-then-read": prompt_then_read,
    "conffile-prompt": conffile_prompt,
    "silent": silent,
    "grandchild": grandchild,
    "ignore-term": ignore_term,
    "tick": tick,
    "sigkill": sigkill,
    "exit": exit_with,
    "winsize": winsize,
    "env": environment,
    "bytes": bad_bytes,
    "echo-password": echo_password,
    "password-in-output": password_in_output,
    "flood": flood,
}


if __name__ == "__main__":
    MODES[sys.argv[1]](*sys.argv[2:])
