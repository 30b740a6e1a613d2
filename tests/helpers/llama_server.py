"""llama.cpp's own server from the `xllamacpp` wheel, started the way its README shows a user
(not through maps' launcher): `python tests/helpers/llama_server.py MODEL.gguf PORT [ALIAS [CTX_SIZE [PARALLEL]]]`
(default: an 8,192-token context shared by 2 slots, 4,096 tokens per request).

It prints one line, the address it listens on, once it is ready, and serves until killed.
"""

from __future__ import annotations

import sys
import time

import xllamacpp


def main() -> None:
    model, port = sys.argv[1], int(sys.argv[2])
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.n_ctx = int(sys.argv[4]) if len(sys.argv) > 4 else 8192
    params.n_parallel = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    params.cpuparams.n_threads = 2
    params.cpuparams_batch.n_threads = 2
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.model_alias = {sys.argv[3] if len(sys.argv) > 3 else "smollm2"}
    server = xllamacpp.Server(params)
    print(server.listening_address, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
