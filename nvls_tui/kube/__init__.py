"""The Kubernetes cluster, through the real ``kubectl``: the fleet's nodes and pods (client.py), and that
view folded into each node's state (view.py)."""
