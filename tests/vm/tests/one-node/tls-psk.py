#!/usr/bin/env python3
"""tls-psk.py KEYFILE HOSTNQN SUBNQN PSKOUT: what libnvme (`nvme connect
--tls`, `nvme tls-key --insert`) computes for a configured PSK in the
interchange format (NVMeTLSkey-1:HH:BASE64:), written out from the NVMe/TCP
specification (§3.6.1.3) and RFC 5869/8446 with Python's hmac and hashlib:
numio's own derivation is not used, so a mistake in it cannot hide here.
Prints the version 1 PSK identity; writes the TLS PSK's bytes to PSKOUT.
(Sourced by no check: 73-nvmf-tls.sh runs it.)"""
import base64, hashlib, hmac, sys, zlib


def hkdf_label(h, ikm, label, context, length):
    prk = hmac.new(b"\0" * h().digest_size, ikm, h).digest()
    lab = b"tls13 " + label
    info = length.to_bytes(2, "big") + bytes([len(lab)]) + lab + bytes([len(context)]) + context
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = hmac.new(prk, t + info + bytes([i]), h).digest()
        out += t
        i += 1
    return out[:length]


def main():
    keyfile, host, sub, out = sys.argv[1:5]
    text = open(keyfile).read().strip()
    prefix, hh, b64, _ = text.split(":")
    assert prefix == "NVMeTLSkey-1", text
    raw = base64.b64decode(b64)
    key, crc = raw[:-4], raw[-4:]
    assert zlib.crc32(key).to_bytes(4, "little") == crc, "bad CRC"
    hh = int(hh)
    cipher = hh if hh else (2 if len(key) == 48 else 1)
    h = hashlib.sha256 if cipher == 1 else hashlib.sha384
    retained = hkdf_label(h, key, b"HostNQN", host.encode(), len(key)) if hh else key
    digest = base64.b64encode(
        hmac.new(retained, f"{host} {sub} NVMe-over-Fabrics".encode(), h).digest()
    ).decode()
    psk = hkdf_label(h, retained, b"nvme-tls-psk", f"{cipher:02d} {digest}".encode(), len(key))
    with open(out, "wb") as f:
        f.write(psk)
    print(f"NVMe1R{cipher:02d} {host} {sub} {digest}")


main()
