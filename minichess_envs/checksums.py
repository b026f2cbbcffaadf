"""SHA-256 checksums of saved payloads (weights, checkpoints), kept in a ``SHA256SUMS`` file beside them.

The file has ``sha256sum``'s format, so ``sha256sum -c SHA256SUMS`` checks a
directory by hand too. A checksum catches corruption (a bit flip, a truncated
copy); it does not prove where a file came from. Loading stays safe without it
because what we load is data only (see docs/security.md).
"""

from __future__ import annotations

import hashlib
import os
import warnings

SUMS = "SHA256SUMS"


class ChecksumWarning(UserWarning):
    """A saved file has no recorded checksum (written by an older version), so it was loaded unverified."""


def sha256(file: str) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(file, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_checksums(directory: str) -> dict[str, str]:
    """``{name: hex digest}`` from ``directory/SHA256SUMS`` (empty when there is none)."""
    file = os.path.join(directory, SUMS)
    if not os.path.exists(file):
        return {}
    sums = {}
    try:
        with open(file, encoding="ascii") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                digest, sep, name = line.rstrip("\n").partition("  ")
                if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                    raise ValueError(f"line {number} is not '<sha256>  <name>'")
                sums[name] = digest
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise ValueError(f"corrupt checksum file {file}: {exc}") from None
    return sums


def write_checksums(directory: str, names: list[str]) -> None:
    """Record the checksums of ``names`` (files in ``directory``) in its SHA256SUMS, keeping other entries."""
    sums = read_checksums(directory)
    for name in names:
        sums[name] = sha256(os.path.join(directory, name))
    file = os.path.join(directory, SUMS)
    with open(file + ".tmp", "w", encoding="ascii") as f:
        f.writelines(f"{digest}  {name}\n" for name, digest in sorted(sums.items()))
    os.replace(file + ".tmp", file)


def verify_checksum(directory: str, name: str, required: bool = True) -> None:
    """Check ``directory/name`` against its recorded checksum; ``ValueError`` naming the file on a mismatch.

    With no checksum recorded: ``ValueError`` if ``required``, else a :class:`ChecksumWarning`.
    """
    file = os.path.join(directory, name)
    expected = read_checksums(directory).get(name)
    if expected is None:
        if required:
            raise ValueError(f"{file} has no checksum in {os.path.join(directory, SUMS)}: cannot tell it is intact")
        warnings.warn(f"{file} has no recorded checksum (saved by an older version): loaded unverified",
                      ChecksumWarning, stacklevel=3)
        return
    if not os.path.exists(file):
        raise ValueError(f"{file} is missing")
    actual = sha256(file)
    if actual != expected:
        raise ValueError(f"{file} is corrupt: its SHA-256 is {actual[:16]}..., {SUMS} recorded {expected[:16]}... "
                         "(the file changed after it was saved)")
