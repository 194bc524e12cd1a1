"""Where the repository is, for tests at any depth (they mirror the packages, so depths differ)."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
