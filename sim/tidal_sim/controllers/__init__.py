"""Karmada's control plane, reproduced: detector, scheduler, rebalancer, members and status."""

from tidal_sim.controllers.manager import ControllerManager
from tidal_sim.controllers.timeline import Timeline

__all__ = ["ControllerManager", "Timeline"]
