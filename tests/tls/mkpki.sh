#!/bin/sh
# mkpki.sh DIR: a throw-away PKI for tests/unit/test_tls.c, made fresh each run
# with the openssl CLI (OpenSSL 3.0 is enough: the expired certificate comes
# from `openssl ca` with explicit dates, which `openssl x509 -req` cannot set
# before 3.4).
#
#   ca.pem              CA (RSA-2048) that signs everything below
#   ca2.pem             an unrelated CA (EC P-256)
#   srv-rsa.{pem,key}   server, RSA-2048,   SANs IP:127.0.0.1, DNS:localhost
#   srv-ec.{pem,key}    server, ECDSA P-256, same SANs
#   expired.{pem,key}   server, EC, same SANs, valid only in 2020
#   wrongname.{pem,key} server, EC, SAN DNS:wrong.example only
#   cli-ec.{pem,key}    client, EC P-256, key in SEC1 ("EC PRIVATE KEY")
#   cli-rsa.{pem,key}   client, RSA-2048, key in PKCS#1 ("RSA PRIVATE KEY")
set -eu
d=${1:?usage: mkpki.sh DIR}
mkdir -p "$d"
cd "$d"
o() { openssl "$@" 2>/dev/null; }

o req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
	-subj "/CN=featurebox test CA" \
	-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
o req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca2.key -out ca2.pem \
	-days 2 -subj "/CN=unrelated CA" \
	-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign

cat >ext.cnf <<'EOF'
[srv]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
[wrong]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:wrong.example
[cli]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
EOF

# sign NAME SECTION KEYSPEC SUBJECT; KEYSPEC "ec:ca2.pem" takes the curve
# (P-256) from that certificate's key
sign() {
	o req -new -newkey "$3" -nodes -keyout "$1.key" -out "$1.csr" -subj "$4"
	o x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
		-extfile ext.cnf -extensions "$2" -out "$1.pem"
}
sign srv-rsa srv rsa:2048 "/CN=featurebox test server (RSA)"
sign srv-ec srv ec:ca2.pem "/CN=featurebox test server (EC)"
sign wrongname wrong ec:ca2.pem "/CN=wrong.example"
sign cli-ec cli ec:ca2.pem "/CN=system:node:test/O=system:nodes"
sign cli-rsa cli rsa:2048 "/CN=test-user"
# the formats kubeconfigs carry besides PKCS#8: SEC1 and PKCS#1
for k in cli-ec cli-rsa; do
	o pkey -in "$k.key" -out "$k.trad" -traditional
	mv "$k.trad" "$k.key"
done

# expired: `openssl ca` is the 3.0 way to put validity dates in the past
mkdir -p cadb
: >cadb/index.txt
echo 1000 >cadb/serial
cat >ca.cnf <<'EOF'
[ca]
default_ca = test
[test]
database = cadb/index.txt
serial = cadb/serial
new_certs_dir = cadb
certificate = ca.pem
private_key = ca.key
default_md = sha256
policy = any
unique_subject = no
copy_extensions = none
[any]
commonName = supplied
[srv]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
EOF
o req -new -newkey ec:ca2.pem -nodes -keyout expired.key -out expired.csr \
	-subj "/CN=expired server"
o ca -batch -config ca.cnf -extensions srv -startdate 20200101000000Z \
	-enddate 20200201000000Z -in expired.csr -out expired.pem -notext

for f in ca ca2 srv-rsa srv-ec wrongname expired cli-ec cli-rsa; do
	[ -s "$f.pem" ] || { echo "mkpki.sh: $f.pem not made" >&2; exit 1; }
done
