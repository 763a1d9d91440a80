#!/bin/sh
# tls-pki.sh DIR: a throwaway PKI for the http TLS test, made with the openssl
# CLI: ca.pem (test CA), srv.pem/srv.key (server certificate for localhost
# and 127.0.0.1, signed by it) and other-ca.pem (a CA that signed nothing).
set -eu
d=$1
cd "$d"
ec="-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj /CN=fb-test-ca \
	-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
openssl req -x509 $ec -keyout other-ca.key -out other-ca.pem -days 2 -subj /CN=fb-other-ca 2>/dev/null
openssl req $ec -keyout srv.key -out srv.csr -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >ext
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 \
	-extfile ext 2>/dev/null
