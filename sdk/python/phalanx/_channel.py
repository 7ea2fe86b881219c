"""How the SDK reaches phalanx-master: the address ("host:port", or "https://host:port" for a master
serving TLS, trusting PHALANX_MASTER_CA or the given PEM), bearer-token metadata, and calls retried
while the master is UNAVAILABLE (a restart, a takeover)."""
import time

import grpc

RETRY_FOR_S = 30.0  # How long a call keeps retrying UNAVAILABLE.
# Reconnect often, so that a standby taking over is reached soon after it serves; a connection
# attempt still gets 2 s.
OPTIONS = [("grpc.initial_reconnect_backoff_ms", 200), ("grpc.max_reconnect_backoff_ms", 1000),
           ("grpc.min_reconnect_backoff_ms", 2000)]


def channel(address, ca_pem=None):
    """A gRPC channel to `address`."""
    if address.startswith("https://"):
        creds = grpc.ssl_channel_credentials(root_certificates=ca_pem.encode() if ca_pem else None)
        return grpc.secure_channel(address[len("https://"):], creds, options=OPTIONS)
    return grpc.insecure_channel(address.removeprefix("http://"), options=OPTIONS)


def call(method, request, token, timeout=60.0, retry_for=RETRY_FOR_S):
    """method(request) with the token, retried with backoff while UNAVAILABLE for `retry_for` s.
    Only for calls that may be repeated (reads, and the trial's reports, which the master stores
    once however often they come)."""
    deadline = time.monotonic() + retry_for
    delay = 0.2
    while True:
        try:
            return method(request, metadata=[("authorization", f"Bearer {token}")] if token else None,
                          timeout=timeout)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
