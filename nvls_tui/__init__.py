"""nvls-tui: diagnose and repair NVLink SHARP (NVLS) failures on HGX NVSwitch nodes."""

__version__ = "0.1.0"
