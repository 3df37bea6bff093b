"""The local Docker runtime (docs/runtime.md).

Engine and base image, run disks, isolation, services, the runner and its session, state
collection, the detector runtime and the sandbox.
"""
