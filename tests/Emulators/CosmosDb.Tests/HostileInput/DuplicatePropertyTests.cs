using System.Text;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

/// <summary>
/// Every JSON the emulator reads from a client refuses a property named twice with a 400 naming it, in
/// the service's error shape: bodies of every kind, a query parameter's value, the batch forms of both
/// SDKs, the autoscale header and the fault settings. Which of two equal names wins is up to each
/// reader; an item stored here must mean one thing to every one of them.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class DuplicatePropertyTests(HostileEmulator emulator)
{
    private const string ItemsDocs = "/" + HostileEmulator.ItemsLink + "/docs";
    private static readonly KeyValuePair<string, string> PartitionKey = new("x-ms-documentdb-partitionkey", "[\"p0\"]");

    public static TheoryData<string, string, string, string> Requests => new()
    {
        // method (and the request's kind), path, body, the property named twice: items, nested objects,
        // upsert, replace, patch, query text and parameter values, the JSON batch form, databases, containers
        { "POST", ItemsDocs, """{"id":"dup-1","pk":"p0","v":1,"v":2}""", "v" },
        { "POST", ItemsDocs, """{"id":"dup-2","pk":"p0","o":{"a":1,"a":2}}""", "a" },
        { "POST upsert", ItemsDocs, """{"id":"dup-3","pk":"p0","pk":"p1"}""", "pk" },
        { "PUT", ItemsDocs + "/seed-0", """{"id":"seed-0","id":"seed-1","pk":"p0"}""", "id" },
        { "PATCH", ItemsDocs + "/seed-0", """{"operations":[{"op":"set","path":"/x","value":1,"value":2}]}""", "value" },
        { "POST query", ItemsDocs, """{"query":"SELECT * FROM c","query":"SELECT VALUE 1 FROM c"}""", "query" },
        { "POST query", ItemsDocs, """{"query":"SELECT * FROM c WHERE c.o = @o","parameters":[{"name":"@o","value":{"a":1,"a":2}}]}""", "a" },
        { "POST batch", ItemsDocs, """[{"operationType":"Create","id":"dup-4","resourceBody":{"id":"dup-4","pk":"p0","pk":"p1"}}]""", "pk" },
        { "POST", "/dbs", """{"id":"dup-db-1","id":"dup-db-2"}""", "id" },
        { "POST", "/dbs/scratch/colls", """{"id":"dup-c","partitionKey":{"paths":["/pk"],"paths":["/other"]}}""", "paths" },
    };

    [Theory]
    [MemberData(nameof(Requests))]
    public void A_body_naming_a_property_twice_is_a_400_naming_it(string method, string path, string body, string property)
    {
        var headers = new List<KeyValuePair<string, string>>();
        switch (method)
        {
            case "POST upsert":
                headers.AddRange([PartitionKey, new("x-ms-documentdb-is-upsert", "True")]);
                break;
            case "POST query":
                headers.AddRange([new("x-ms-documentdb-isquery", "True"), new("x-ms-documentdb-query-enablecrosspartition", "True"), new("Content-Type", "application/query+json")]);
                break;
            case "POST batch":
                headers.AddRange([PartitionKey, new("x-ms-cosmos-is-batch-request", "True"), new("x-ms-cosmos-batch-atomic", "True")]);
                break;
            default:
                headers.AddRange(path.StartsWith(ItemsDocs, StringComparison.Ordinal) ? [PartitionKey] : []);
                break;
        }

        var request = new HostileRequest(method.Split(' ')[0], path, headers, Encoding.UTF8.GetBytes(body));

        Verdict.BadRequest(request, emulator.Send(request), $"Duplicate property '{property}'");
    }

    [Fact]
    public void A_batch_operation_body_in_the_dotnet_sdks_binary_form_naming_a_property_twice_is_a_400_naming_it()
    {
        var request = new HostileRequest("POST", ItemsDocs, [PartitionKey, new("x-ms-cosmos-is-batch-request", "True"), new("x-ms-cosmos-batch-atomic", "True")],
            HybridRow.Single(0, "[\"p0\"]", "dup-5", """{"id":"dup-5","pk":"p0","v":1,"v":2}"""));

        Verdict.BadRequest(request, emulator.Send(request), "Duplicate property 'v'");
    }

    [Fact]
    public void An_offer_replacement_naming_its_throughput_twice_is_a_400_naming_it()
    {
        var request = new HostileRequest("PUT", "/offers/" + emulator.OfferRid, [],
            Encoding.UTF8.GetBytes($$$"""{"id":"{{{emulator.OfferRid}}}","content":{"offerThroughput":400,"offerThroughput":100000}}"""));

        Verdict.BadRequest(request, emulator.Send(request), "Duplicate property 'offerThroughput'");
    }

    [Fact]
    public void An_autoscale_header_naming_its_maximum_twice_is_a_400()
    {
        var request = new HostileRequest("POST", "/dbs", [new("x-ms-cosmos-offer-autopilot-settings", """{"maxThroughput":4000,"maxThroughput":100000}""")],
            Encoding.UTF8.GetBytes("""{"id":"dup-autoscale"}"""));

        Verdict.BadRequest(request, emulator.Send(request), "x-ms-cosmos-offer-autopilot-settings");
    }

    [Fact]
    public void Fault_settings_naming_a_setting_twice_are_a_400_naming_it()
    {
        var request = new HostileRequest("PUT", EmulatorEndpoints.FaultsPath, [new(EmulatorEndpoints.KeyHeader, emulator.Emulator.AccountKey)],
            Encoding.UTF8.GetBytes("""{"seed":1,"rules":[],"seed":2}"""), Sign: false);

        Verdict.BadRequest(request, emulator.Send(request), "Duplicate property 'seed'");
    }
}
