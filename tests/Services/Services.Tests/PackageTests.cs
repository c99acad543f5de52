using System.Net;
using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Cosmos;
using DroneDelivery.Package;
using DroneDelivery.Services.Tests.Infrastructure;

namespace DroneDelivery.Services.Tests;

[Collection(CosmosCollection.Name)]
public sealed class PackageTests(CosmosFixture cosmos) : IAsyncLifetime
{
    private ServiceApp _service = null!;

    public async Task InitializeAsync() => _service = await ServiceApp.StartAsync(Definitions.Package, cosmos.Settings());

    public async Task DisposeAsync() => await _service.DisposeAsync();

    [Fact]
    public async Task A_package_is_created_once_and_read_back()
    {
        var id = NewId();
        var upsert = Package("owner-p1", 2.5, 2025, 4);

        var first = await _service.Client.PutJsonAsync($"api/packages/{id}", upsert);
        var repeat = await _service.Client.PutJsonAsync($"api/packages/{id}", upsert);
        var read = await _service.Client.GetAsync($"api/packages/{id}");

        Assert.Equal(HttpStatusCode.Created, first.StatusCode);
        Assert.Equal(HttpStatusCode.OK, repeat.StatusCode);
        Assert.Equal(
            new PackageRecord(id, upsert.DeliveryId!, "owner-p1", PackageSize.Medium, 2.5, "fragile", 2025, 4),
            await read.ReadAsync<PackageRecord>());
    }

    [Fact]
    public async Task The_same_deliverys_package_can_be_changed_but_another_delivery_cannot_take_it()
    {
        var id = NewId();
        var upsert = Package("owner-p2", 1.0, 2025, 4);
        await _service.Client.PutJsonAsync($"api/packages/{id}", upsert);

        var changed = await _service.Client.PutJsonAsync($"api/packages/{id}", upsert with { Weight = 3.0 });
        var stolen = await _service.Client.PutJsonAsync($"api/packages/{id}", upsert with { DeliveryId = NewId() });

        Assert.Equal(HttpStatusCode.OK, changed.StatusCode);
        Assert.Equal(3.0, (await changed.ReadAsync<PackageRecord>()).Weight);
        Assert.Equal(HttpStatusCode.Conflict, stolen.StatusCode);
        Assert.Contains(upsert.DeliveryId!, (await stolen.ProblemAsync()).GetProperty("detail").GetString());
    }

    [Fact]
    public async Task A_deleted_package_is_gone()
    {
        var id = NewId();
        await _service.Client.PutJsonAsync($"api/packages/{id}", Package("owner-p3", 1, 2025, 4));

        var delete = await _service.Client.DeleteAsync($"api/packages/{id}");
        var read = await _service.Client.GetAsync($"api/packages/{id}");
        var deleteAgain = await _service.Client.DeleteAsync($"api/packages/{id}");

        Assert.Equal(HttpStatusCode.NoContent, delete.StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, read.StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, deleteAgain.StatusCode);
    }

    [Fact]
    public async Task The_summary_is_the_real_count_and_total_weight_of_an_owners_month()
    {
        var owner = NewId();
        foreach (var (weight, month) in new[] { (1.25, 6), (2.5, 6), (4.0, 6), (100.0, 7) })
        {
            Assert.Equal(HttpStatusCode.Created, (await _service.Client.PutJsonAsync($"api/packages/{NewId()}", Package(owner, weight, 2025, month))).StatusCode);
        }

        await _service.Client.PutJsonAsync($"api/packages/{NewId()}", Package(NewId(), 50, 2025, 6));

        var june = await Summary(owner, 2025, 6);
        var july = await Summary(owner, 2025, 7);
        var august = await Summary(owner, 2025, 8);

        Assert.Equal((3, 7.75), (june.Count, june.TotalWeight));
        Assert.Equal((1, 100.0), (july.Count, july.TotalWeight));
        Assert.Equal((0, 0.0), (august.Count, august.TotalWeight));
    }

    [Fact]
    public async Task Summaries_record_their_request_charge_and_calls()
    {
        using var metrics = new MetricRecorder(CosmosTelemetry.OperationRequestCharge, CosmosTelemetry.OperationCalls, CosmosTelemetry.Calls);

        await Summary(NewId(), 2025, 6);

        Assert.True(metrics.Sum(CosmosTelemetry.OperationRequestCharge, ("operation", PackageTelemetry.Operations.GetPackageSummary)) > 0);
        // One query: its partition's page (and the plan the client asks for first).
        Assert.True(metrics.Sum(CosmosTelemetry.OperationCalls, ("operation", PackageTelemetry.Operations.GetPackageSummary)) >= 1);
        Assert.True(metrics.Sum(CosmosTelemetry.Calls, ("operation", PackageTelemetry.Operations.GetPackageSummary), ("db.operation.name", "query"), ("http.response.status_code", "200")) >= 1);
    }

    [Fact]
    public async Task A_calls_duration_names_the_container_it_went_to()
    {
        using var metrics = new MetricRecorder(CosmosTelemetry.CallDuration);

        await Summary(NewId(), 2025, 6);

        Assert.NotEmpty(metrics.Of(CosmosTelemetry.CallDuration, ("db.collection.name", new PackagesSettings().ContainerId), ("db.operation.name", "query")));
        Assert.Empty(metrics.Of(CosmosTelemetry.CallDuration, ("db.collection.name", "none"), ("db.operation.name", "query")));
    }

    [Fact]
    public async Task Invalid_or_missing_fields_are_listed_in_one_400()
    {
        var response = await _service.Client.PutJsonAsync("api/packages/pkg-1", new PackageUpsert { OwnerId = "o", Weight = -1, Year = 1999, Month = 13 });

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Equal(["deliveryId", "month", "size", "weight", "year"], await response.InvalidFieldsAsync());
    }

    [Fact]
    public async Task A_bad_package_id_is_a_400()
    {
        var response = await _service.Client.GetAsync("api/packages/" + new string('x', 65));

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Equal(["id"], await response.InvalidFieldsAsync());
    }

    [Fact]
    public async Task Ready_when_the_container_exists_and_not_when_it_does_not()
    {
        await using var missing = await ServiceApp.StartAsync(Definitions.Package, cosmos.Settings(new() { ["Packages:ContainerId"] = "no-such-container" }));

        var ready = await _service.Client.GetAsync("health/ready");
        var notReady = await missing.Client.GetAsync("health/ready");

        Assert.Equal(HttpStatusCode.OK, ready.StatusCode);
        Assert.Equal(HttpStatusCode.ServiceUnavailable, notReady.StatusCode);
        Assert.Contains("no-such-container does not exist", await notReady.Content.ReadAsStringAsync());
    }

    [Theory]
    [InlineData("Packages:ContainerId", "bad/name", "Setting 'Packages:ContainerId' = 'bad/name' is invalid")]
    [InlineData("Cosmos:ConnectionString", null, "Exactly one of ConnectionString (account key) and AccountEndpoint (Entra ID) must be set")]
    [InlineData("Cosmos:AccountEndpoint", "https://account.documents.azure.com/", "Exactly one of ConnectionString")]
    [InlineData("Cosmos:ConnectionMode", "Tcp", "Cosmos:ConnectionMode")]
    [InlineData("Cosmos:MaxRetryAttemptsOnRateLimitedRequests", "-1", "Setting 'Cosmos:MaxRetryAttemptsOnRateLimitedRequests' = '-1' is invalid")]
    public Task Package_refuses_a_bad_setting(string key, string? value, string expected) =>
        SettingsTests.AssertRefusedAsync(Definitions.Package, cosmos.Settings(new() { [key] = value }), expected);

    private async Task<PackageSummary> Summary(string owner, int year, int month)
    {
        var response = await _service.Client.GetAsync($"api/packages/summary?ownerId={owner}&year={year}&month={month}");
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        return await response.ReadAsync<PackageSummary>();
    }

    private static PackageUpsert Package(string owner, double weight, int year, int month) => new()
    {
        DeliveryId = NewId(),
        OwnerId = owner,
        Size = PackageSize.Medium,
        Weight = weight,
        Tag = "fragile",
        Year = year,
        Month = month,
    };

    private static string NewId() => Guid.NewGuid().ToString("N");
}
