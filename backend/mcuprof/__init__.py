"""mcuprof: live call trees and flame graphs for microcontroller firmware."""

__version__ = "0.1.0"
