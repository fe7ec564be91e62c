"""The emulator's Kubernetes REST API server (discovery, CRUD, patch, status, watch, admin)."""

from tidal_sim.apiserver.accounting import RequestAccounting, RequestRecord
from tidal_sim.apiserver.server import ApiServer

__all__ = ["ApiServer", "RequestAccounting", "RequestRecord"]
