"""`make k6-cluster`: the k6 test of `make k6` as k6-operator manifests (`python -m loadtest.cluster`)."""
