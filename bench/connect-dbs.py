#!/usr/bin/env python3
"""Connect to each database named on standard input (one per line), in
that order, from this one process, run one query in it and disconnect:
what a database costs any client that starts a backend in it and reads
one table, without a client process started per database.

    bench/connect-dbs.py HOST PORT USER QUERY < names

libpq through ctypes, so that nothing beyond the server's own client
library is needed.  Prints "seconds databases".  Used by
bench/many-objects.sh."""

import ctypes
import ctypes.util
import sys
import time

CONNECTION_OK = 0
PGRES_TUPLES_OK = 2


def load_libpq():
    lib = ctypes.CDLL(ctypes.util.find_library("pq") or "libpq.so.5")
    lib.PQconnectdb.restype = ctypes.c_void_p
    lib.PQconnectdb.argtypes = [ctypes.c_char_p]
    lib.PQstatus.argtypes = [ctypes.c_void_p]
    lib.PQerrorMessage.restype = ctypes.c_char_p
    lib.PQerrorMessage.argtypes = [ctypes.c_void_p]
    lib.PQexec.restype = ctypes.c_void_p
    lib.PQexec.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.PQresultStatus.argtypes = [ctypes.c_void_p]
    lib.PQclear.argtypes = [ctypes.c_void_p]
    lib.PQfinish.argtypes = [ctypes.c_void_p]
    return lib


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: connect-dbs.py HOST PORT USER QUERY < names")
    host, port, user, query = sys.argv[1:]
    names = [line.strip() for line in sys.stdin if line.strip()]
    lib = load_libpq()
    t0 = time.monotonic()
    for name in names:
        conn = lib.PQconnectdb(f"host={host} port={port} user={user} dbname={name}".encode())
        if lib.PQstatus(conn) != CONNECTION_OK:
            sys.exit(f"connection to {name} failed: {lib.PQerrorMessage(conn).decode()}")
        res = lib.PQexec(conn, query.encode())
        if lib.PQresultStatus(res) != PGRES_TUPLES_OK:
            sys.exit(f"query in {name} failed: {lib.PQerrorMessage(conn).decode()}")
        lib.PQclear(res)
        lib.PQfinish(conn)
    print(f"{time.monotonic() - t0:.3f} {len(names)}")


if __name__ == "__main__":
    main()
