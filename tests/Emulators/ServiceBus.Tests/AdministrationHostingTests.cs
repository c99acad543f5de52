using System.Globalization;
using System.Net.Http;
using System.Security.Cryptography.X509Certificates;
using Azure.Core.Pipeline;
using Azure.Messaging.ServiceBus;
using Azure.Messaging.ServiceBus.Administration;
using DroneDelivery.LocalProcesses;
using DroneDelivery.TestSupport;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// The administration API of the emulator as its own process, as tools meet it, and over its HTTPS listener, whose
/// certificate a client trusts by taking it from the emulator.
/// </summary>
public sealed class AdministrationHostingTests
{
    /// <summary>The line the program prints after its ready line when HTTP is on.</summary>
    private const string Printed = "Administration connection string: ";

    private const string EmptyConfig = """{ "UserConfig": { "Namespaces": [ { "Name": "sbemulatorns", "Queues": [], "Topics": [] } ], "Logging": { "Type": "Console" } } }""";

    [Fact]
    public async Task An_emulator_process_prints_its_administration_connection_string_and_serves_entities_made_through_it()
    {
        var config = Path.Combine(Path.GetTempPath(), $"sb-admin-config-{Guid.NewGuid():N}.json");
        await File.WriteAllTextAsync(config, EmptyConfig);
        var port = FreePort.Next();
        var httpPort = FreePort.Next();
        try
        {
            await using var process = await LocalProcess.StartAsync(
                LocalProcessSpec.ForProject("servicebus-emulator", "DroneDelivery.Emulators.ServiceBus", "--port", Text(port), "--http-port", Text(httpPort), "--config", config)
                    with { IsReadyLine = line => line.StartsWith(Printed, StringComparison.Ordinal) });
            var printed = process.RecentOutput.Single(l => l.StartsWith(Printed, StringComparison.Ordinal))[Printed.Length..];
            var admin = AdministrationScope.CreateAdmin(printed);
            await using var client = EmulatorScope.CreateClient($"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true");

            await admin.CreateQueueAsync(new CreateQueueOptions("made-over-http") { MaxDeliveryCount = 3 });
            await using var sender = client.CreateSender("made-over-http");
            await sender.SendMessageAsync(new ServiceBusMessage("through a queue made at run time"));
            var runtime = (await admin.GetQueueRuntimePropertiesAsync("made-over-http")).Value;
            await using var receiver = client.CreateReceiver("made-over-http");
            var received = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
            await receiver.CompleteMessageAsync(received!);
            await admin.DeleteQueueAsync("made-over-http");

            Assert.Equal($"Endpoint=sb://127.0.0.1:{httpPort};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true", printed);
            Assert.Equal(1, runtime.ActiveMessageCount);
            Assert.Equal("through a queue made at run time", received!.Body.ToString());
            Assert.False((await admin.QueueExistsAsync("made-over-http")).Value);
        }
        finally
        {
            File.Delete(config);
        }
    }

    [Fact]
    public async Task Over_https_the_sdk_reaches_the_api_when_it_trusts_the_certificate_the_emulator_serves_and_not_otherwise()
    {
        await using var emulator = await ServiceBusEmulator.StartAsync(new ServiceBusEmulatorOptions { HttpsPort = 0, Queues = [new QueueOptions { Name = EmulatorScope.Queue }] });
        using var http = new HttpClient { BaseAddress = emulator.HttpEndpoint };
        var pem = await http.GetStringAsync("/_emulator/certificate");
        using var trusted = X509Certificate2.CreateFromPem(pem);
        // Without UseDevelopmentEmulator the SDK speaks HTTPS to the endpoint's port, as it does to the service.
        var connection = $"Endpoint=sb://127.0.0.1:{emulator.HttpsEndpoint!.Port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE";
        using var handler = new HttpClientHandler { ServerCertificateCustomValidationCallback = (_, certificate, _, _) => Trusts(trusted, certificate) };
        var options = new ServiceBusAdministrationClientOptions { Transport = new HttpClientTransport(handler) };
        options.Retry.MaxRetries = 0;
        var trusting = new ServiceBusAdministrationClient(connection, options);
        var untrusting = AdministrationScope.CreateAdmin(connection);

        var queue = (await trusting.GetQueueAsync(EmulatorScope.Queue)).Value;
        var refused = await Assert.ThrowsAnyAsync<Exception>(() => untrusting.GetQueueAsync(EmulatorScope.Queue));

        Assert.Equal(EmulatorScope.Queue, queue.Name);
        Assert.Equal(pem, emulator.CertificatePem);
        Assert.Contains("SSL connection could not be established", refused.ToString(), StringComparison.Ordinal);
        Assert.Contains($"https=https://127.0.0.1:{emulator.HttpsEndpoint.Port}", emulator.ReadyLine, StringComparison.Ordinal);
    }

    /// <summary>What a client trusting only the emulator's certificate accepts: a chain ending at it.</summary>
    private static bool Trusts(X509Certificate2 trusted, X509Certificate2? presented)
    {
        if (presented is null)
        {
            return false;
        }

        using var chain = new X509Chain();
        chain.ChainPolicy.TrustMode = X509ChainTrustMode.CustomRootTrust;
        chain.ChainPolicy.CustomTrustStore.Add(trusted);
        chain.ChainPolicy.RevocationMode = X509RevocationMode.NoCheck;
        return chain.Build(presented);
    }

    private static string Text(int port) => port.ToString(CultureInfo.InvariantCulture);
}
