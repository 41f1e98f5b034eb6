"""``eagerflow.distribute``: distribution strategies.

This package is where MirroredStrategy, MultiWorkerMirroredStrategy (MPI) and
ParameterServerStrategy will live, on top of a small Communicator interface. None of them
is implemented yet; the in-process rendezvous that a remote transport will plug into is in
:mod:`eagerflow.function.rendezvous`.
"""
