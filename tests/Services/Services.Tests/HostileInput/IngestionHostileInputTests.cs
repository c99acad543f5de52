using System.Net;
using System.Net.Http.Headers;
using System.Text;
using DroneDelivery.Security.Tokens;
using DroneDelivery.Contracts;
using DroneDelivery.Emulators.ServiceBus;
using DroneDelivery.Services.Tests.Infrastructure;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace DroneDelivery.Services.Tests.HostileInput;

/// <summary>
/// Ingestion's real Program on a Service Bus emulator queue of its own (sending at once, no batching
/// delay), with a stub Delivery that knows one delivery (<c>d-1</c> of <c>owner-0001</c>); one client for every case.
/// </summary>
public sealed class IngestionTarget : IAsyncLifetime
{
    private ServiceBusEmulator _bus = null!;
    private StubServer _delivery = null!;

    internal ServiceApp Ingestion { get; private set; } = null!;

    internal HttpClient Client { get; private set; } = null!;

    /// <summary>Tokens the cases choose from: every role, the owner of <c>d-1</c>, another owner, an owner that may only read.</summary>
    internal IReadOnlyList<string> Tokens { get; private set; } = [];

    public async Task InitializeAsync()
    {
        _bus = await ServiceBusEmulator.StartAsync(new ServiceBusEmulatorOptions { Queues = [new QueueOptions { Name = "hostile" }] });
        _delivery = await StubServer.StartAsync(app => app.MapGet(Routes.Deliveries.Status, (string id) => id == "d-1"
            ? Results.Json(EdgeBackends.Status("d-1", "owner-0001"), ContractJson.Options)
            : Results.Problem(statusCode: 404, title: "Delivery not found")));
        Ingestion = await ServiceApp.StartAsync(Definitions.Ingestion, new Dictionary<string, string?>
        {
            ["ServiceBus:ConnectionString"] = _bus.ConnectionString,
            ["ServiceBus:QueueName"] = "hostile",
            ["Batching:MaxBatchDelay"] = "00:00:00",
            ["Backends:Delivery:BaseAddress"] = _delivery.BaseAddress.ToString(),
        });
        Client = Ingestion.ClientAs(null);
        var issuer = Ingestion.Issuer!;
        Tokens =
        [
            issuer.Issue(DevelopmentCaller.Operator()),
            issuer.Issue(DevelopmentCaller.ForOwner("owner-0001")),
            issuer.Issue(DevelopmentCaller.ForOwner("owner-0002")),
            issuer.Issue(DevelopmentCaller.ForOwner("owner-0001") with { Scopes = [ApiAccess.Scopes.InvoicesRead] }),
        ];
    }

    public async Task DisposeAsync()
    {
        await Ingestion.DisposeAsync();
        await _delivery.DisposeAsync();
        await _bus.DisposeAsync();
    }
}

/// <summary>A body sent with a content type and one of the target's tokens.</summary>
public sealed record BodyCase(string Body, string ContentType, int Token);

/// <summary>A route id, a body (PATCH) and one of the target's tokens.</summary>
public sealed record ItemCase(string Id, string Body, string ContentType, int Token);

public static class IngestionArbitraries
{
    private static readonly Gen<string> Owner = Gen.Frequency(
        (4, Gen.Elements("\"owner-0001\"", "\"owner-0002\"")),
        (1, HostileGen.JsonValue(1)));

    private static readonly Gen<string> Id = Gen.Frequency((2, Gen.Elements("d-1", "d-2")), (5, HostileGen.Text));

    public static Arbitrary<BodyCase> Bodies() => Arb.From(
        from body in HostileGen.DeliveryRequestBody(Owner)
        from contentType in HostileGen.ContentType
        from token in Gen.Choose(0, 3)
        select new BodyCase(body, contentType, token));

    public static Arbitrary<ItemCase> Items() => Arb.From(
        from id in Id
        from body in HostileGen.RescheduleBody
        from contentType in HostileGen.ContentType
        from token in Gen.Choose(0, 3)
        select new ItemCase(id, body, contentType, token));
}

/// <summary>
/// Hostile input for Ingestion's public endpoints, generated (FsCheck): every case is answered, never with
/// a 5xx, and a 400 names what was wrong. <see cref="HostileCases.PerTarget"/> cases per target.
/// </summary>
public sealed class IngestionHostileInputTests(IngestionTarget target) : IClassFixture<IngestionTarget>
{
    [Property(MaxTest = HostileCases.PerTarget, Arbitrary = [typeof(IngestionArbitraries)], QuietOnSuccess = false)]
    public Task Delivery_request_body(BodyCase c) =>
        HostileCases.SendAsync("ingestion POST /api/deliveryrequests (body)", target.Client, Request(HttpMethod.Post, "api/deliveryrequests", c.Body, c.ContentType, c.Token), ValidTokenNotRefused);

    [Property(MaxTest = HostileCases.PerTarget, Arbitrary = [typeof(IngestionArbitraries)], QuietOnSuccess = false)]
    public Task Reschedule_route_and_body(ItemCase c) =>
        HostileCases.SendAsync("ingestion PATCH /api/deliveryrequests/{id} (route, body)", target.Client,
            Request(HttpMethod.Patch, $"api/deliveryrequests/{HostileGen.PathSegment(c.Id)}", c.Body, c.ContentType, c.Token), ValidTokenNotRefused);

    [Property(MaxTest = HostileCases.PerTarget, Arbitrary = [typeof(IngestionArbitraries)], QuietOnSuccess = false)]
    public Task Cancel_route(ItemCase c) =>
        HostileCases.SendAsync("ingestion DELETE /api/deliveryrequests/{id} (route)", target.Client,
            Request(HttpMethod.Delete, $"api/deliveryrequests/{HostileGen.PathSegment(c.Id)}", null, null, c.Token),
            response => response.StatusCode == HttpStatusCode.Accepted && (c.Id != "d-1" ? c.Token != 0 : c.Token is 2 or 3)
                ? "a delivery the caller does not own was cancelled" : ValidTokenNotRefused(response));

    private static string? ValidTokenNotRefused(HttpResponseMessage response) =>
        response.StatusCode == HttpStatusCode.Unauthorized ? "a valid token was refused" : null;

    private HttpRequestMessage Request(HttpMethod method, string path, string? body, string? contentType, int token)
    {
        var request = new HttpRequestMessage(method, path);
        if (body is not null)
        {
            request.Content = new ByteArrayContent(Encoding.UTF8.GetBytes(body));
            if (!string.IsNullOrEmpty(contentType))
            {
                request.Content.Headers.TryAddWithoutValidation("Content-Type", contentType);
            }
        }

        request.Headers.Authorization = new AuthenticationHeaderValue("Bearer", target.Tokens[token]);
        return request;
    }
}
