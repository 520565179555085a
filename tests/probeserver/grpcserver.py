#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# grpcserver: a gRPC health server (python3-grpcio) for probe-run's tests
"""Usage: grpcserver.py HEALTHPORTFILE BAREPORTFILE

Serves grpc.health.v1.Health/Check on one port (written to HEALTHPORTFILE)
and a server without the health service on another (BAREPORTFILE), so that
a probe there gets UNIMPLEMENTED.  The messages are encoded by hand.
Services: "" and "web" SERVING, "down" NOT_SERVING, "unknown" UNKNOWN,
"slow" SERVING after 3 s, anything else the NOT_FOUND status.
"""
import os
import sys
import time
from concurrent import futures

import grpc

STATUS = {"": 1, "web": 1, "down": 2, "unknown": 0}


def read_service(data):
    """HealthCheckRequest: field 1, a length-delimited string."""
    pos, service = 0, ""
    while pos < len(data):
        key = data[pos]
        pos += 1
        if key != 0x0A:
            raise ValueError("unexpected field")
        length, shift = 0, 0
        while True:
            b = data[pos]
            pos += 1
            length |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        service = data[pos:pos + length].decode()
        pos += length
    return service


def check(request, context):
    service = read_service(request)
    if service == "slow":
        time.sleep(3)
        return bytes([0x08, 1])
    if service not in STATUS:
        context.abort(grpc.StatusCode.NOT_FOUND, "unknown service")
    status = STATUS[service]
    return bytes([0x08, status]) if status else b""


def start(portfile, with_health):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    if with_health:
        handler = grpc.unary_unary_rpc_method_handler(
            check, request_deserializer=None, response_serializer=None)
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("grpc.health.v1.Health",
                                                  {"Check": handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.rename(portfile + ".tmp", portfile)
    return server


def main():
    servers = [start(sys.argv[1], True), start(sys.argv[2], False)]
    try:
        servers[0].wait_for_termination()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
