# SPDX-License-Identifier: Apache-2.0
# signing: the X.509 side of certificates.k8s.io: reading a CSR's request
# as the API's validation does (Go's crypto/x509 decides what parses), the
# checks the kubernetes.io signers make, and signing with the server's CA
# as kube-controller-manager's signer does.  Needs Python's cryptography
# package (Debian's python3-cryptography); without it the server still
# serves everything else, and a CSR's request is refused as unreadable.

import base64
import re
import secrets
from datetime import timedelta

try:
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    MISSING = None
except ImportError as err:  # pragma: no cover: only without the package
    MISSING = "the server cannot read certificate requests: %s" % err

KUBELET_CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING = "kubernetes.io/kubelet-serving"
APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
LEGACY_UNKNOWN = "kubernetes.io/legacy-unknown"
SIGNERS = (KUBELET_CLIENT, KUBELET_SERVING, APISERVER_CLIENT)

# the key usages certificates.k8s.io/v1 knows
USAGES = ("signing", "digital signature", "content commitment", "key encipherment",
          "key agreement", "data encipherment", "cert sign", "crl sign", "encipher only",
          "decipher only", "any", "server auth", "client auth", "code signing",
          "email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user",
          "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc")

# the curves Go's crypto/x509 reads (P-224 is gone since Go 1.x stopped
# parsing it in requests): anything else is "unsupported elliptic curve"
CURVES = ("secp256r1", "secp384r1", "secp521r1")

# the signer backdates what it signs, and ends a short-lived certificate
# (under SHORT) that long after now rather than after the start
BACKDATE = timedelta(minutes=5)
SHORT = timedelta(hours=8)
MIN_REQUESTED = timedelta(minutes=10)

DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1, "m": 60,
                  "h": 3600}
DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|ms|s|m|h)")


def parse_duration(text):
    """A Go duration ("30s", "1h30m", "8760h") in seconds, or ValueError."""
    if text == "0":
        return 0.0  # the one number Go takes without a unit
    pos, total = 0, 0.0
    while pos < len(text):
        match = DURATION_PART.match(text, pos)
        if match is None:
            raise ValueError('invalid duration "%s"' % text)
        total += float(match.group(1)) * DURATION_UNITS[match.group(2)]
        pos = match.end()
    if not text:
        raise ValueError('invalid duration ""')
    return total


class Request:
    """A parsed certificate request: subject, SANs, key."""

    def __init__(self, csr):
        self.csr = csr
        subject = csr.subject
        self.common_name = ", ".join(a.value for a in
                                     subject.get_attributes_for_oid(NameOID.COMMON_NAME))
        self.organizations = [a.value for a in
                              subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
        self.dns, self.ips, self.emails, self.uris = [], [], [], []
        try:
            sans = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except x509.ExtensionNotFound:
            sans = None
        if sans is not None:
            self.dns = sans.get_values_for_type(x509.DNSName)
            self.ips = sans.get_values_for_type(x509.IPAddress)
            self.emails = sans.get_values_for_type(x509.RFC822Name)
            self.uris = sans.get_values_for_type(x509.UniformResourceIdentifier)


def read_pem_block(data):
    """The first PEM block of data: (type, DER), or (None, None)."""
    match = re.search(rb"-----BEGIN ([^-\r\n]+)-----\r?\n(.*?)-----END \1-----", data, re.S)
    if match is None:
        return None, None
    body = b"".join(line for line in match.group(2).split() if b":" not in line)
    try:
        return match.group(1).decode("ascii", "replace"), base64.b64decode(body, validate=True)
    except ValueError:
        return None, None


def parse_request(pem):
    """A Request from spec.request's bytes, or raise ValueError with what
    the API's validation says: the block type, what x509 cannot read, a
    signature that does not verify."""
    if MISSING:
        raise ValueError(MISSING)
    kind, der = read_pem_block(pem)
    if kind != "CERTIFICATE REQUEST":
        raise ValueError("PEM block type must be CERTIFICATE REQUEST")
    try:
        csr = x509.load_der_x509_csr(der)
        key = csr.public_key()
    except (ValueError, UnsupportedAlgorithm) as err:
        if "curve" in str(err).lower():
            raise ValueError("x509: unsupported elliptic curve")
        raise ValueError("x509: malformed certificate request")
    if isinstance(key, ec.EllipticCurvePublicKey):
        if key.curve.name not in CURVES:
            raise ValueError("x509: unsupported elliptic curve")
    elif not isinstance(key, (rsa.RSAPublicKey, ed25519.Ed25519PublicKey)):
        raise ValueError("x509: cannot verify signature: algorithm unimplemented")
    try:
        if not csr.is_signature_valid:
            raise ValueError("x509: ECDSA verification failure"
                             if isinstance(key, ec.EllipticCurvePublicKey)
                             else "crypto/rsa: verification error")
    except (InvalidSignature, UnsupportedAlgorithm):
        raise ValueError("x509: cannot verify signature: algorithm unimplemented")
    return Request(csr)


# ---------------------------------------------------------------------------
# What each signer accepts, worded as kubernetes' validation words it.

CLIENT_USAGES = ({"digital signature", "client auth"},
                 {"digital signature", "key encipherment", "client auth"})
SERVING_USAGES = ({"digital signature", "server auth"},
                  {"digital signature", "key encipherment", "server auth"})


def usages_text(usages):
    return "[%s]" % " ".join(sorted(usages))


def kubelet_client_problem(req, usages):
    """Why req is not a kubelet client certificate request, or None."""
    if req.organizations != ["system:nodes"]:
        return "subject organization is not system:nodes"
    for values, what in ((req.dns, "DNS"), (req.emails, "Email"), (req.ips, "IP"),
                         (req.uris, "URI")):
        if values:
            return "%s subjectAltNames are not allowed" % what
    if not req.common_name.startswith("system:node:"):
        return "subject common name does not begin with system:node:"
    if set(usages) not in CLIENT_USAGES:
        return "usages did not match %s" % usages_text(CLIENT_USAGES[1])
    return None


def kubelet_serving_problem(req, usages):
    """Why req is not a kubelet serving certificate request, or None."""
    if req.organizations != ["system:nodes"]:
        return "subject organization is not system:nodes"
    if not req.dns and not req.ips:
        return "DNS or IP subjectAltName is required"
    if req.emails:
        return "Email subjectAltNames are not allowed"
    if req.uris:
        return "URI subjectAltNames are not allowed"
    if set(usages) not in SERVING_USAGES:
        return "usages did not match %s" % usages_text(SERVING_USAGES[1])
    if not req.common_name.startswith("system:node:"):
        return "subject common name does not begin with system:node:"
    return None


def apiserver_client_problem(req, usages):
    for usage in usages:
        if usage not in ("digital signature", "key encipherment", "client auth"):
            return "invalid usage for client certificate: %s" % usage
    if "client auth" not in usages:
        return "missing required usage for client certificate: client auth"
    return None


SIGNER_CHECKS = {KUBELET_CLIENT: kubelet_client_problem,
                 KUBELET_SERVING: kubelet_serving_problem,
                 APISERVER_CLIENT: apiserver_client_problem}


# ---------------------------------------------------------------------------
# The CA.

EXTENDED = {} if MISSING else {
    "server auth": ExtendedKeyUsageOID.SERVER_AUTH,
    "client auth": ExtendedKeyUsageOID.CLIENT_AUTH,
    "code signing": ExtendedKeyUsageOID.CODE_SIGNING,
    "email protection": ExtendedKeyUsageOID.EMAIL_PROTECTION,
    "timestamping": ExtendedKeyUsageOID.TIME_STAMPING,
    "ocsp signing": ExtendedKeyUsageOID.OCSP_SIGNING,
}
KEY_USAGE_BITS = {"signing": "digital_signature", "digital signature": "digital_signature",
                  "content commitment": "content_commitment",
                  "key encipherment": "key_encipherment", "key agreement": "key_agreement",
                  "data encipherment": "data_encipherment", "cert sign": "key_cert_sign",
                  "crl sign": "crl_sign"}


class Authority:
    """The server's CA (DIR/ca.crt, ca.key) signing for every signer, with
    at most lifetime seconds (kube-controller-manager's
    --cluster-signing-duration), starting backdate seconds before."""

    def __init__(self, cert_file, key_file, lifetime, backdate=BACKDATE.total_seconds()):
        self.lifetime = timedelta(seconds=lifetime)
        self.backdate = timedelta(seconds=backdate)
        self.cert = self.key = None
        if MISSING:
            return
        with open(cert_file, "rb") as src:
            self.cert = x509.load_pem_x509_certificate(src.read())
        with open(key_file, "rb") as src:
            self.key = serialization.load_pem_private_key(src.read(), None)

    def duration(self, expiration_seconds):
        """The signer's choice: the lifetime, or less if asked, never
        under ten minutes."""
        if expiration_seconds is None:
            return self.lifetime
        wanted = timedelta(seconds=expiration_seconds)
        if wanted > self.lifetime:
            return self.lifetime
        return max(wanted, MIN_REQUESTED)

    def sign(self, req, usages, expiration_seconds, now):
        """The PEM certificate for req, as the kubernetes.io signers make it."""
        if MISSING:
            raise ValueError(MISSING)
        now = now.replace(microsecond=0)
        ttl = self.duration(expiration_seconds)
        not_before = now - self.backdate
        not_after = now + ttl if ttl < SHORT else not_before + ttl
        ca_end = getattr(self.cert, "not_valid_after_utc", None) \
            or self.cert.not_valid_after.replace(tzinfo=now.tzinfo)
        not_after = min(not_after, ca_end)
        builder = (x509.CertificateBuilder()
                   .subject_name(req.csr.subject)
                   .issuer_name(self.cert.subject)
                   .public_key(req.csr.public_key())
                   .serial_number(secrets.randbits(63) | 1)
                   .not_valid_before(not_before.replace(tzinfo=None))
                   .not_valid_after(not_after.replace(tzinfo=None)))
        bits = {name: False for name in ("digital_signature", "content_commitment",
                                         "key_encipherment", "data_encipherment",
                                         "key_agreement", "key_cert_sign", "crl_sign",
                                         "encipher_only", "decipher_only")}
        for usage in usages:
            if usage in KEY_USAGE_BITS:
                bits[KEY_USAGE_BITS[usage]] = True
        if any(bits.values()):
            builder = builder.add_extension(x509.KeyUsage(**bits), critical=True)
        extended = [EXTENDED[u] for u in usages if u in EXTENDED]
        if extended:
            builder = builder.add_extension(x509.ExtendedKeyUsage(extended), critical=False)
        builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None),
                                        critical=True)
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
            critical=False)
        names = ([x509.DNSName(n) for n in req.dns]
                 + [x509.IPAddress(i) for i in req.ips]
                 + [x509.RFC822Name(e) for e in req.emails]
                 + [x509.UniformResourceIdentifier(u) for u in req.uris])
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names),
                                            critical=not req.csr.subject)
        cert = builder.sign(self.key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM)
