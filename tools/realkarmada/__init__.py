"""A real Karmada control plane for the end-to-end tier, built from upstream Go modules.

`python -m tools.realkarmada build | up --kubeconfig-out F | down` (see __main__).
"""
