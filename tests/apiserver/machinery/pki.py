# SPDX-License-Identifier: Apache-2.0
# pki: start-up files: the CA and certificates (made with the openssl CLI,
# or copied from a cache), the TLS context, and the kubeconfigs and token
# files clients read.

import json
import os
import secrets
import shutil
import ssl
import subprocess
import tempfile
import threading

OPENSSL_CONFIG = """\
# Written by apiserver.py: only what its certificates need.
[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
"""

EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
# kubelet-client is the server's own identity towards kubelets (logs,
# proxy, metrics), as kube-apiserver's --kubelet-client-certificate
LEAF_CERTS = (("server", "/CN=kube-apiserver", "server"),
              ("admin", "/O=system:masters/CN=admin", "client"),
              ("viewer", "/CN=viewer", "client"),
              ("kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet-client", "client"))


def openssl(args, stdin=None):
    proc = subprocess.run(["openssl"] + args, input=stdin, capture_output=True)
    if proc.returncode != 0:
        raise RuntimeError("openssl %s failed: %s" % (args[0], proc.stderr.decode(
            "utf-8", "replace").strip()))
    return proc.stdout


def make_leaf(directory, config, name, subject, section):
    """A key and a certificate signed by the CA, EC P-256.  OpenSSL 3 signs
    in the same step that makes the key; older ones need a CSR first."""
    path = os.path.join(directory, name)
    ca = ["-CA", os.path.join(directory, "ca.crt"), "-CAkey", os.path.join(directory, "ca.key"),
          "-set_serial", str(secrets.randbits(63)), "-days", "3650",
          "-extensions", section, "-out", path + ".crt"]
    try:
        openssl(["req", "-x509", "-new", "-config", config] + EC_KEY +
                ["-keyout", path + ".key", "-subj", subject] + ca)
        return
    except RuntimeError:
        if openssl(["version"]).startswith(b"OpenSSL 3"):
            raise
    csr = openssl(["req", "-new", "-config", config] + EC_KEY +
                  ["-keyout", path + ".key", "-subj", subject])
    openssl(["x509", "-req", "-extfile", config] + ca, csr)


def make_pki(directory):
    """CA, server and client certificates.  The leaves are made in
    parallel: start-up time is mostly openssl's."""
    config = os.path.join(directory, "openssl.cnf")
    write_file(config, OPENSSL_CONFIG)
    openssl(["req", "-x509", "-new", "-config", config, "-extensions", "ca"] + EC_KEY +
            ["-keyout", os.path.join(directory, "ca.key"),
             "-out", os.path.join(directory, "ca.crt"),
             "-days", "3650", "-subj", "/CN=kubelet-tools test CA"])
    make_leaves(directory, LEAF_CERTS)


def make_leaves(directory, specs):
    config = os.path.join(directory, "openssl.cnf")
    write_file(config, OPENSSL_CONFIG)
    errors = []

    def leaf(*args):
        try:
            make_leaf(directory, config, *args)
        except RuntimeError as err:
            errors.append(err)
    threads = [threading.Thread(target=leaf, args=spec) for spec in specs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def copy_pki(directory, cache):
    """The certificates of CACHE, made there first by whichever server comes
    first: tests that start a server each share one CA and save openssl's
    time.  A server makes them aside and renames the whole directory, so
    CACHE is complete whenever it exists; a server that loses the race drops
    its own."""
    cache = os.path.abspath(cache)
    if not os.path.isdir(cache):
        parent = os.path.dirname(cache)
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".pki-", dir=parent)
        make_pki(staging)
        try:
            os.rename(staging, cache)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    for name in ("ca.crt", "ca.key"):
        shutil.copy(os.path.join(cache, name), os.path.join(directory, name))
    missing = []
    for spec in LEAF_CERTS:
        try:
            for ext in (".crt", ".key"):
                shutil.copy(os.path.join(cache, spec[0] + ext),
                            os.path.join(directory, spec[0] + ext))
        except FileNotFoundError:
            missing.append(spec)  # a cache made before this leaf existed
    if missing:
        make_leaves(directory, missing)


X509_V_FLAG_NO_CHECK_TIME = 0x200000  # OpenSSL's; the ssl module names no constant


def tls_context(directory):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(os.path.join(directory, "server.crt"),
                            os.path.join(directory, "server.key"))
    context.load_verify_locations(os.path.join(directory, "ca.crt"))
    context.verify_mode = ssl.CERT_OPTIONAL
    # a client certificate's dates are the authenticator's to check, after
    # the handshake, as kube-apiserver's are: an expired one is a 401
    context.verify_flags |= X509_V_FLAG_NO_CHECK_TIME
    context.set_alpn_protocols(["http/1.1"])
    return context


def write_file(path, text):
    """Write whole or not at all, so a reader never sees half a file."""
    tmp = path + ".tmp"
    with open(tmp, "w") as out:
        out.write(text)
    os.replace(tmp, path)


def kubeconfig(url, ca, user):
    """A kubeconfig with one cluster, one user and the context "local".
    Values are JSON strings, which YAML reads as double-quoted scalars."""
    q = json.dumps
    user_lines = "".join("    %s: %s\n" % (key, q(value)) for key, value in user.items())
    return ("apiVersion: v1\nkind: Config\n"
            "clusters:\n- name: local\n  cluster:\n"
            "    server: %s\n    certificate-authority: %s\n"
            "users:\n- name: local\n  user:\n%s"
            "contexts:\n- name: local\n  context:\n    cluster: local\n    user: local\n"
            "current-context: local\n" % (q(url), q(ca), user_lines))


def write_client_files(directory, port, admin_token, viewer_token, reader_token,
                       bootstrap_token):
    url = "https://127.0.0.1:%d" % port
    ca = os.path.join(directory, "ca.crt")
    write_file(os.path.join(directory, "port"), "%d\n" % port)
    write_file(os.path.join(directory, "url"), url + "\n")
    write_file(os.path.join(directory, "token"), admin_token)
    write_file(os.path.join(directory, "viewer-token"), viewer_token)
    write_file(os.path.join(directory, "kubeconfig"), kubeconfig(url, ca, {"token": admin_token}))
    write_file(os.path.join(directory, "kubeconfig-viewer"),
               kubeconfig(url, ca, {"token": viewer_token}))
    write_file(os.path.join(directory, "reader-token"), reader_token)
    write_file(os.path.join(directory, "kubeconfig-reader"),
               kubeconfig(url, ca, {"token": reader_token}))
    write_file(os.path.join(directory, "bootstrap-token"), bootstrap_token)
    write_file(os.path.join(directory, "bootstrap-kubeconfig"),
               kubeconfig(url, ca, {"token": bootstrap_token}))
    write_file(os.path.join(directory, "kubeconfig-cert"), kubeconfig(url, ca, {
        "client-certificate": os.path.join(directory, "admin.crt"),
        "client-key": os.path.join(directory, "admin.key")}))


def remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass
