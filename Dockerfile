# syntax=docker/dockerfile:1
# Builds the sluice binary and a small image that runs `sluice serve`.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/sluice ./cmd/sluice \
 && mkdir -p /out/cache

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sluice /usr/local/bin/sluice
# The WASM compilation cache lives here, owned by the nonroot user (the
# distroless image has no shell to create it); mount a volume to keep it
# across restarts.
COPY --from=build --chown=nonroot:nonroot /out/cache /var/cache/sluice
ENV SLUICE_CACHE_DIR=/var/cache/sluice
EXPOSE 8080
USER nonroot
# Healthy when the server answers /readyz (it runs and reaches Postgres).
# With another --addr, set SLUICE_HEALTH_ADDR (e.g. http://127.0.0.1:9090).
HEALTHCHECK --interval=10s --timeout=6s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/sluice", "health"]
ENTRYPOINT ["/usr/local/bin/sluice"]
CMD ["serve", "--addr", ":8080", "--migrate"]
