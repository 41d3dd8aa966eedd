# The OLM bundle image: `podman build -f bundle/bundle.Dockerfile -t <registry>/secsched-operator-bundle:v0.1.0 bundle/`
FROM scratch
LABEL operators.operatorframework.io.bundle.mediatype.v1=registry+v1 \
      operators.operatorframework.io.bundle.manifests.v1=manifests/ \
      operators.operatorframework.io.bundle.metadata.v1=metadata/ \
      operators.operatorframework.io.bundle.package.v1=secsched-operator \
      operators.operatorframework.io.bundle.channels.v1=alpha \
      operators.operatorframework.io.bundle.channel.default.v1=alpha
COPY manifests /manifests/
COPY metadata /metadata/
