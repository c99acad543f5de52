using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Tests;

public sealed class TlsClientTests
{
    [Fact]
    public async Task Client_speaks_amqp_over_tls_and_checks_the_server_certificate()
    {
        await using var broker = new LoopbackBroker();
        using var certificate = SelfSigned();
        using var terminator = new TcpListener(IPAddress.Loopback, 0);
        terminator.Start();
        var port = ((IPEndPoint)terminator.LocalEndpoint).Port;
        _ = Task.Run(() => TerminateTlsAsync(terminator, certificate, broker.Port));
        X509Certificate? seen = null;
        var options = new AmqpConnectionOptions
        {
            Sasl = SaslProfile.Anonymous,
            UseTls = true,
            HostName = "localhost",
            OperationTimeout = TimeSpan.FromSeconds(30),
            CertificateValidation = (_, cert, _, _) =>
            {
                seen = cert;
                return cert?.GetCertHashString() == certificate.GetCertHashString();
            },
        };

        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", port, options);
        var session = await connection.BeginSessionAsync();
        var sender = await session.AttachSenderAsync(new LinkOptions { Name = "tls", Source = new Source(), Target = new Target { Address = "queue" } });
        var outcome = await sender.SendAsync(new AmqpMessage { Body = new ValueBody("over tls") }.ToArray(), [1]);

        Assert.IsType<Accepted>(outcome);
        Assert.Equal(certificate.GetCertHashString(), seen!.GetCertHashString());
        await Assert.ThrowsAsync<System.Security.Authentication.AuthenticationException>(() =>
            AmqpConnection.ConnectAsync("127.0.0.1", port, options with { CertificateValidation = (_, _, _, _) => false }));
    }

    private static X509Certificate2 SelfSigned()
    {
        using var key = RSA.Create(2048);
        var request = new CertificateRequest("CN=localhost", key, HashAlgorithmName.SHA256, RSASignaturePadding.Pkcs1);
        var san = new SubjectAlternativeNameBuilder();
        san.AddDnsName("localhost");
        request.CertificateExtensions.Add(san.Build());
        using var created = request.CreateSelfSigned(DateTimeOffset.UtcNow.AddMinutes(-5), DateTimeOffset.UtcNow.AddHours(1));
        return X509CertificateLoader.LoadPkcs12(created.Export(X509ContentType.Pfx), null);
    }

    // Accepts TLS connections and relays the plain bytes to the broker, like a TLS-terminating gateway.
    private static async Task TerminateTlsAsync(TcpListener listener, X509Certificate2 certificate, int brokerPort)
    {
        while (true)
        {
            TcpClient client;
            try
            {
                client = await listener.AcceptTcpClientAsync();
            }
            catch (Exception e) when (e is SocketException or ObjectDisposedException or InvalidOperationException)
            {
                return;
            }

            _ = Task.Run(async () =>
            {
                using (client)
                using (var ssl = new SslStream(client.GetStream()))
                using (var upstream = new TcpClient())
                {
                    try
                    {
                        await ssl.AuthenticateAsServerAsync(certificate);
                        await upstream.ConnectAsync(IPAddress.Loopback, brokerPort);
                        var plain = upstream.GetStream();
                        await Task.WhenAny(ssl.CopyToAsync(plain), plain.CopyToAsync(ssl));
                    }
                    catch (Exception e) when (e is IOException or System.Security.Authentication.AuthenticationException or SocketException or ObjectDisposedException)
                    {
                    }
                }
            });
        }
    }
}
