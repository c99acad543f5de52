# The standalone Aspire dashboard of k8s/observability/aspire-dashboard.yaml: an OTLP receiver (gRPC and
# HTTP) with a browser UI for the services' traces, metrics and structured logs, kept in memory. The app is
# the one the NuGet package Aspire.Dashboard.Sdk.linux-x64 carries in its tools/ folder (a self-contained
# single-file executable with its wwwroot and two native libraries), restored with a throwaway project that
# only downloads the package. The package is x64 only, so is the image. Build with any context (nothing is
# copied from it):
#
#   docker build -f k8s/observability/aspire-dashboard.Dockerfile -t dronedelivery/aspire-dashboard:13.6.5 k8s/observability
#
# k8s/build-images.sh kind builds it with the other images, tagged with ASPIRE_DASHBOARD_VERSION. Like
# src/Dockerfile it uses no BuildKit-only syntax, so the classic builder builds it too.

ARG DOTNET_VERSION=10.0

FROM mcr.microsoft.com/dotnet/sdk:${DOTNET_VERSION} AS restore
ARG DOTNET_VERSION
ARG ASPIRE_DASHBOARD_VERSION=13.6.5
WORKDIR /restore
RUN printf '%s\n' \
        '<Project Sdk="Microsoft.NET.Sdk">' \
        "  <PropertyGroup><TargetFramework>net${DOTNET_VERSION}</TargetFramework></PropertyGroup>" \
        "  <ItemGroup><PackageDownload Include=\"Aspire.Dashboard.Sdk.linux-x64\" Version=\"[${ASPIRE_DASHBOARD_VERSION}]\" /></ItemGroup>" \
        '</Project>' > dashboard.csproj \
    && dotnet restore dashboard.csproj --packages /packages \
    && cp -r "/packages/aspire.dashboard.sdk.linux-x64/${ASPIRE_DASHBOARD_VERSION}/tools" /app \
    && chmod 755 /app/Aspire.Dashboard \
    && test -d /app/wwwroot

# Self-contained, so the runtime-deps image; its "extra" flavour has ICU, which the dashboard loads.
FROM mcr.microsoft.com/dotnet/runtime-deps:${DOTNET_VERSION}-noble-chiseled-extra AS runtime
WORKDIR /app
COPY --from=restore --chown=root:root /app ./
# The non-root user of the chiseled image. HOME is where ASP.NET Core keeps its data-protection keys:
# /tmp, the pod's one writable folder (an emptyDir), so the root file system can be read-only.
USER 1654
ENV HOME=/tmp \
    TMPDIR=/tmp \
    DOTNET_NOLOGO=1
# The UI, OTLP over gRPC, OTLP over HTTP (the manifest's ASPNETCORE_URLS and ASPIRE_DASHBOARD_OTLP_*_URL).
EXPOSE 18888 18889 18890
ENTRYPOINT ["/app/Aspire.Dashboard"]
