#!/usr/bin/env bash
# Builds the nine Drone Delivery images (six services, two emulators, the load driver) from
# src/Dockerfile with the names and tag the chart expects, then loads them into a kind cluster or
# pushes them to a registry. For kind it also builds the standalone Aspire dashboard of
# k8s/observability/aspire-dashboard.yaml (k8s/observability/aspire-dashboard.Dockerfile), tagged
# with the dashboard's version.
#
#   k8s/build-images.sh kind [cluster-name]        build without attestations, then load into kind as an image archive (default cluster: dronedelivery)
#   k8s/build-images.sh push <registry>            build as <registry>/dronedelivery/<name>:<tag>, then docker push
#   k8s/build-images.sh acr <acr-name>             build in Azure Container Registry (az acr build, the classic builder; no local Docker needed)
#
# The tag is the chart's image.tag (charts/dronedelivery/values.yaml); override with TAG=... For a
# registry, give each build a tag of its own (docs/deploy-aks.md: TAG=git-<commit>): nodes pull a tag
# they already hold only once, so a rebuilt image under an old tag never reaches them.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-}"
target="${2:-}"
tag="${TAG:-$(sed -n 's/^  tag: "\(.*\)"$/\1/p' charts/dronedelivery/values.yaml | head -n 1)}"
[ -n "$tag" ] || { echo "Cannot read image.tag from charts/dronedelivery/values.yaml; set TAG." >&2; exit 2; }

# image name → project folder under src/
images=(
  "gateway:Services/Gateway"
  "ingestion:Services/Ingestion"
  "workflow:Services/Workflow"
  "delivery:Services/Delivery"
  "package:Services/Package"
  "dronescheduler:Services/DroneScheduler"
  "cosmosdb-emulator:Emulators/CosmosDb"
  "servicebus-emulator:Emulators/ServiceBus/Emulator"
  "loaddriver:Tools/LoadDriver"
)

case "$mode" in
  kind)
    cluster="${target:-dronedelivery}"
    # No provenance or SBOM attestations: on engines that keep images in containerd, BuildKit
    # otherwise wraps each image in an index with an attestation manifest that `docker save`
    # leaves out of the archive, and kind's import then fails on the missing content (with
    # `kind load docker-image` and `kind load image-archive` alike). Without attestations the
    # image is one single-platform manifest that both import. The classic builder adds none.
    if docker buildx version >/dev/null 2>&1; then
      build=(docker buildx build --load --provenance=false --sbom=false)
    else
      build=(docker build)
    fi
    load() {
      archive="$(mktemp)"
      docker save "$1" -o "$archive"
      kind load image-archive "$archive" --name "$cluster"
      rm -f "$archive"
    }
    for entry in "${images[@]}"; do
      name="${entry%%:*}"; project="${entry#*:}"
      "${build[@]}" -f src/Dockerfile --build-arg PROJECT="$project" -t "dronedelivery/$name:$tag" .
      load "dronedelivery/$name:$tag"
    done
    # The dashboard's image is its NuGet package's app: its context is only its own folder.
    dashboard="$(sed -n 's/^ARG ASPIRE_DASHBOARD_VERSION=\(.*\)$/\1/p' k8s/observability/aspire-dashboard.Dockerfile)"
    [ -n "$dashboard" ] || { echo "Cannot read ASPIRE_DASHBOARD_VERSION from k8s/observability/aspire-dashboard.Dockerfile." >&2; exit 2; }
    "${build[@]}" -f k8s/observability/aspire-dashboard.Dockerfile -t "dronedelivery/aspire-dashboard:$dashboard" k8s/observability
    load "dronedelivery/aspire-dashboard:$dashboard"
    ;;
  push)
    [ -n "$target" ] || { echo "Usage: $0 push <registry>" >&2; exit 2; }
    for entry in "${images[@]}"; do
      name="${entry%%:*}"; project="${entry#*:}"
      docker build -f src/Dockerfile --build-arg PROJECT="$project" -t "$target/dronedelivery/$name:$tag" .
      docker push "$target/dronedelivery/$name:$tag"
    done
    ;;
  acr)
    [ -n "$target" ] || { echo "Usage: $0 acr <acr-name>" >&2; exit 2; }
    for entry in "${images[@]}"; do
      name="${entry%%:*}"; project="${entry#*:}"
      az acr build --registry "$target" --image "dronedelivery/$name:$tag" \
        --file src/Dockerfile --build-arg PROJECT="$project" .
    done
    ;;
  *)
    sed -n '2,14p' "$0" >&2
    exit 2
    ;;
esac
