"""Karmada's control plane, reproduced: detector, scheduler, rebalancer, members and status."""

from tidal.sim.controllers.manager import ControllerManager
from tidal.sim.controllers.timeline import Timeline

__all__ = ["ControllerManager", "Timeline"]
