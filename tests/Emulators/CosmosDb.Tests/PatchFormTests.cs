using System.Net;
using System.Text;
using System.Text.Json;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// The two body forms of a patch: the .NET SDK sends <c>{"operations": [...], "condition": ...}</c>,
/// the JavaScript SDK a bare array of operations when there is no condition (the REST API's
/// "Patch Document" accepts both). Both apply the same operations.
/// </summary>
public sealed class PatchFormTests() : EmulatorTest("/ownerId", 2)
{
    [Fact]
    public async Task Dotnet_sdk_object_form_applies_its_operations()
    {
        await Container.CreateItemAsync(new Parcel("p1", "owner-1", 2, null));

        var patched = await Container.PatchItemAsync<Parcel>("p1", new PartitionKey("owner-1"),
            [PatchOperation.Increment("/weight", 3), PatchOperation.Set("/label", "fragile")]);

        Assert.Equal(HttpStatusCode.OK, patched.StatusCode);
        Assert.Equal(5, patched.Resource.Weight);
        Assert.Equal("fragile", patched.Resource.Label);
    }

    [Fact]
    public async Task Bare_array_form_applies_the_same_operations()
    {
        await Container.CreateItemAsync(new Parcel("p2", "owner-2", 2, null));
        using var http = new HttpClient();

        using var response = await http.SendAsync(Patch("p2", "owner-2",
            """[{"op":"incr","path":"/weight","value":3},{"op":"set","path":"/label","value":"fragile"}]"""));

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        var read = await Container.ReadItemAsync<Parcel>("p2", new PartitionKey("owner-2"));
        Assert.Equal(5, read.Resource.Weight);
        Assert.Equal("fragile", read.Resource.Label);
    }

    [Theory]
    [InlineData("[]")]
    [InlineData("[1]")]
    [InlineData("\"set\"")]
    [InlineData("{\"operations\":[]}")]
    public async Task Empty_or_malformed_operations_are_400(string body)
    {
        await Container.UpsertItemAsync(new Parcel("p3", "owner-3", 2, null));
        using var http = new HttpClient();

        using var response = await http.SendAsync(Patch("p3", "owner-3", body));

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
    }

    private HttpRequestMessage Patch(string id, string partitionKey, string body)
    {
        var link = $"dbs/test/colls/items/docs/{id}";
        var request = CosmosTestHost.SignedRequest(Emulator, HttpMethod.Patch, link, "docs", link);
        request.Content = new StringContent(body, Encoding.UTF8, "application/json-patch+json");
        request.Headers.TryAddWithoutValidation("x-ms-documentdb-partitionkey", JsonSerializer.Serialize(new[] { partitionKey }));
        return request;
    }

    public sealed record Parcel(string Id, string OwnerId, double Weight, string? Label);
}
