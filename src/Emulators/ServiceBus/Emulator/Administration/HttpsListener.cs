using System.Net;
using System.Security.Cryptography.X509Certificates;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace DroneDelivery.Emulators.ServiceBus.Administration;

/// <summary>
/// The optional HTTPS listener: the JavaScript SDK's administration client builds <c>https://</c> URLs whatever the
/// connection string says, so the emulator serves its HTTP endpoints over TLS too, on a port of its own, with a
/// certificate for <c>localhost</c> and <c>127.0.0.1</c> made at start-up. Clients trust it by taking its PEM from
/// <see cref="Path"/> (over plain HTTP or HTTPS) rather than by switching certificate checks off.
/// </summary>
internal sealed class HttpsListener : IDisposable
{
    public const string Path = "/_emulator/certificate";

    private HttpsListener(X509Certificate2 certificate, int port)
    {
        Certificate = certificate;
        Port = port;
        Pem = certificate.ExportCertificatePem();
    }

    public X509Certificate2 Certificate { get; }

    /// <summary>The certificate (no key) in PEM: what a client adds to the certificates it trusts.</summary>
    public string Pem { get; }

    private int Port { get; }

    /// <summary>A listener when <see cref="ServiceBusEmulatorOptions.HttpsPort"/> is set, else null.</summary>
    public static HttpsListener? For(ServiceBusEmulatorOptions options, IPAddress address) =>
        options.HttpsPort is { } port ? new HttpsListener(SelfSignedCertificate.Create(address), port) : null;

    public void Listen(KestrelServerOptions kestrel, IPAddress address) => kestrel.Listen(address, Port, listen => listen.UseHttps(Certificate));

    public void MapCertificate(WebApplication app) => app.MapGet(Path, () => Results.Text(Pem, "application/x-pem-file"));

    public void Dispose() => Certificate.Dispose();
}
