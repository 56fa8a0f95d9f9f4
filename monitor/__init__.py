"""claim-monitor: watches arXiv and keeps dated research claims honest."""

__version__ = "0.1.0"
