#!/usr/bin/env bash
# Writes the certificates tests/it/tls.rs uses, beside this script: a CA, a server certificate for
# 127.0.0.1 and localhost, a client certificate signed by the CA, and a self-signed client
# certificate the CA never vouched for. All valid for 100 years, so that the committed files
# serve CI for good and it needs no openssl. The keys are for tests only: they are public.
#
# Run it again only to replace them: tests/tls/gen-certs.sh
set -euo pipefail
cd "$(dirname "$0")"

DAYS=36500
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

key() {
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
}

# A certificate for key $2 with subject $3 and the extensions in file $4, signed by the CA.
sign() {
    openssl req -new -key "$2" -subj "$3" -out "$work/$1.csr"
    openssl x509 -req -in "$work/$1.csr" -CA ca.crt -CAkey "$work/ca.key" -CAcreateserial \
        -CAserial "$work/ca.srl" -days "$DAYS" -sha256 -extfile "$4" -out "$1.crt" 2>/dev/null
}

key "$work/ca.key"
openssl req -x509 -new -key "$work/ca.key" -subj "/CN=sieved test CA" -days "$DAYS" -sha256 \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.crt

cat > "$work/server.ext" <<'EXT'
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost
EXT
key server.key
sign server server.key "/CN=localhost" "$work/server.ext"

cat > "$work/client.ext" <<'EXT'
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth
EXT
key client.key
sign client client.key "/CN=sieved test client" "$work/client.ext"

# Signed by nobody the server trusts: refused where client certificates are checked.
key untrusted-client.key
openssl req -x509 -new -key untrusted-client.key -subj "/CN=untrusted client" -days "$DAYS" \
    -sha256 -addext "basicConstraints=critical,CA:FALSE" \
    -addext "extendedKeyUsage=clientAuth" -out untrusted-client.crt

# The CA's key is not kept: nothing more is ever signed with it.
chmod 0644 ./*.crt ./*.key
openssl verify -CAfile ca.crt server.crt client.crt
