"""The RPC transport of a cluster of tasks: gRPC with the protobuf messages of
``worker_service.proto``.

``wire`` turns arrays and errors into messages and back (sizes checked before anything is
allocated, nothing pickled), ``server`` is the service every task runs, ``client`` calls it
with the job's shared secret and a deadline on every call, and ``rendezvous`` carries
Send/Recv between tasks. grpc is imported only by ``server`` and ``client``, on first use
(``pip install 'eagerflow[ps]'``).
"""
