#!/bin/bash
# Build the test images that the v1.20.2 [NodeConformance] tests use (linux/amd64, OCI) from
# Debian packages and the binaries build.sh made, push them to the registries of registry-up.sh,
# and write $REPO_LIST (KUBE_TEST_REPO_LIST for e2e.test). Names/tags follow
# test/utils/image/manifest.go of v1.20.2; the registry part is replaced.
# Stand-ins (not the upstream image contents):
#   busybox:1.29            Debian busybox-static 1.35, all applets
#   agnhost:2.21            agnhost built from the v1.20.2 tree (its VERSION file says 2.25) on busybox,
#                           plus Debian curl and netcat-openbsd with their shared libraries, and Debian dash
#                           as /bin/sh (Debian's busybox sh runs its own applets before PATH, so "nc -u"
#                           in "sh -c" would get busybox nc, which has no -u)
#   nginx:1.14/1.15-alpine, httpd:2.4.38/2.4.39-alpine   busybox httpd on port 80 under a TERM-trapping sh
#   nonewprivs:1.0          test/images/nonewprivs (nnp, setuid root) on busybox
#   nonroot:1.0             busybox with USER 1234
#   pause:3.2               build/pause/linux/pause.c compiled static with Debian gcc
#   authenticated alpine:3.7 (in $REG_AUTH, needs credentials)   busybox
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
command -v skopeo >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq skopeo >/dev/null
[ -x /bin/busybox ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null
for b in agnhost pause nnp nc-openbsd/bin/nc.openbsd; do [ -e "$CONF_BIN/$b" ] || { echo "missing $CONF_BIN/$b: run build.sh" >&2; exit 1; }; done
mk="python3 $here/mkimage.py"
rm -rf "$IMG_DIR"; mkdir -p "$IMG_DIR"
push() { # layout-dir repo:tag [registry]
  skopeo copy -q --dest-tls-verify=false --dest-creds "$REG_AUTH_USER:$REG_AUTH_PASS" \
    "oci:$1:img" "docker://${3:-$REG}/$2" >/dev/null
  echo "pushed ${3:-$REG}/$2"
}
web() { # docroot -> a busybox httpd that exits on TERM (like nginx/httpd do)
  echo "[\"/bin/sh\",\"-c\",\"echo ok > $1/index.html; trap 'exit 0' TERM INT; httpd -f -p 80 -h $1 & wait\"]"
}
$mk --out "$IMG_DIR/busybox" --tag img --cmd '["sh"]'
push "$IMG_DIR/busybox" library/busybox:1.29
$mk --out "$IMG_DIR/agnhost" --tag img --file "$CONF_BIN/agnhost:/agnhost:755" --link agnhost-2:agnhost \
  --elf /bin/dash:/bin/sh --elf /usr/bin/curl:/usr/bin/curl --elf "$CONF_BIN/nc-openbsd/bin/nc.openbsd:/usr/local/bin/nc" \
  --file "$CONF_BIN/files/localhost.crt:/localhost.crt:644" \
  --file "$CONF_BIN/files/localhost.key:/localhost.key:644" \
  --dir uploads --entrypoint '["/agnhost"]' --cmd '["pause"]' --port 80 --port 8080 --port 8081 --port 9376
push "$IMG_DIR/agnhost" e2e-test-images/agnhost:2.21
$mk --out "$IMG_DIR/nginx" --tag img --dir usr/share/nginx/html --cmd "$(web /usr/share/nginx/html)" --port 80
push "$IMG_DIR/nginx" library/nginx:1.14-alpine
push "$IMG_DIR/nginx" library/nginx:1.15-alpine
$mk --out "$IMG_DIR/httpd" --tag img --dir usr/local/apache2/htdocs --cmd "$(web /usr/local/apache2/htdocs)" --port 80
push "$IMG_DIR/httpd" library/httpd:2.4.38-alpine
push "$IMG_DIR/httpd" library/httpd:2.4.39-alpine
$mk --out "$IMG_DIR/nonewprivs" --tag img --file "$CONF_BIN/nnp:/usr/local/bin/nnp:4755:0:0" --cmd '["nnp"]'
push "$IMG_DIR/nonewprivs" kubernetes-e2e-test-images/nonewprivs:1.0
$mk --out "$IMG_DIR/nonroot" --tag img --user 1234 --cmd '["sh"]'
push "$IMG_DIR/nonroot" kubernetes-e2e-test-images/nonroot:1.0
$mk --out "$IMG_DIR/pause" --tag img --file "$CONF_BIN/pause:/pause:755" --entrypoint '["/pause"]'
push "$IMG_DIR/pause" k8s.gcr.io/pause:3.2
push "$IMG_DIR/busybox" authenticated-image-pulling/alpine:3.7 "$REG_AUTH"
cat > "$REPO_LIST" <<Y
# KUBE_TEST_REPO_LIST for e2e.test: every registry the v1.20.2 tests name, mapped to $REG.
# invalidRegistry stays as upstream (the test expects the pull to fail).
gcAuthenticatedRegistry: $REG_AUTH/authenticated-image-pulling
dockerLibraryRegistry: $REG/library
dockerGluster: $REG/gluster
e2eRegistry: $REG/kubernetes-e2e-test-images
e2eVolumeRegistry: $REG/kubernetes-e2e-test-images/volume
promoterE2eRegistry: $REG/e2e-test-images
buildImageRegistry: $REG/build-image
invalidRegistry: invalid.com/invalid
gcRegistry: $REG/k8s.gcr.io
sigStorageRegistry: $REG/sig-storage
gcrReleaseRegistry: $REG/gke-release
privateRegistry: $REG_AUTH/k8s-authenticated-test
sampleRegistry: $REG/google-samples
Y
echo "repo list: $REPO_LIST"
