using System.Text;
using System.Text.Json;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

/// <summary>
/// Each defect the generated tests found (or that reading the code for them showed), with the
/// minimal input the generator shrank to: every one was a 500 (an exception escaping the handler)
/// or worse, and is now a 400 naming the problem, answered in the service's error shape.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class HostileInputRegressionTests(HostileEmulator emulator)
{
    private const string ItemsDocs = "/" + HostileEmulator.ItemsLink + "/docs";

    private static byte[] Utf8(string text) => Encoding.UTF8.GetBytes(text);

    private static KeyValuePair<string, string> Key(string json) => new("x-ms-documentdb-partitionkey", json);

    private HostileResponse BadRequest(HostileRequest request, string naming, int subStatus = 0)
    {
        var response = emulator.Send(request);
        Verdict.BadRequest(request, response, naming, subStatus);
        return response;
    }

    [Fact]
    public void A_hexadecimal_literal_over_64_bits_is_a_syntax_error()
    {
        // Was 500: long.Parse threw OverflowException in the lexer.
        BadRequest(new HostileRequest("POST", "/offers", [new("x-ms-documentdb-isquery", "True")], Utf8("{\"query\":\"0xFFFFFFFFFFFFFFFFF)\"}")),
            "hexadecimal");
    }

    [Fact]
    public void An_unpaired_surrogate_escape_in_a_patch_path_is_refused()
    {
        // Was 500: JsonElement.GetString threw InvalidOperationException.
        BadRequest(new HostileRequest("PATCH", ItemsDocs + "/seed-0", [Key("[\"p0\"]")], Utf8("[{\"\":\"\",\"path\":\"\\uDD00\"}]")), "UTF-16");
    }

    [Fact]
    public void An_unpaired_surrogate_escape_in_an_item_id_is_refused()
    {
        BadRequest(new HostileRequest("POST", "/" + HostileEmulator.HierarchicalLink + "/docs", [Key("[{}]")], Utf8("{\"id\":\"\\ud800\",\"\":1}")), "UTF-16");
    }

    [Fact]
    public void An_unpaired_surrogate_escape_in_a_batch_operation_field_name_is_refused()
    {
        BadRequest(new HostileRequest("POST", "/" + HostileEmulator.HierarchicalLink + "/docs",
            [new("x-ms-cosmos-is-batch-request", "True"), new("x-ms-cosmos-batch-atomic", "True"), Key("[\"u1@\",-2.25,\"\"]")],
            Utf8("[{\"operationType\":\"\",\"id\":\"\",\"\\ud800\":{}}]")), "UTF-16");
    }

    [Fact]
    public void A_body_that_ends_before_its_content_length_is_a_400_not_a_server_failure()
    {
        // Was 500, logged as an unexpected failure: Kestrel's BadHttpRequestException ("Unexpected end of request
        // content", thrown when a client closes mid-body, as a seeder's timed-out upsert does) escaped the handlers.
        // Over a socket the close races the request's abort, so the body here fails exactly as Kestrel's does.
        var request = new HostileRequest("POST", ItemsDocs, [Key("[\"p0\"]")]);
        var response = emulator.Direct(request, (new EndsEarly(Utf8("{\"id\":\"trunc")), 1_000));

        Assert.Equal(400, response.Status);
        Assert.Contains("Unexpected end of request content", response.ErrorMessage(), StringComparison.Ordinal);
    }

    /// <summary>A request body that yields its bytes, then fails as Kestrel's does when the client closes before the Content-Length.</summary>
    private sealed class EndsEarly(byte[] bytes) : MemoryStream(bytes, writable: false)
    {
        public override async ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default)
        {
            var read = await base.ReadAsync(buffer, cancellationToken);
            return read > 0 ? read : throw new Microsoft.AspNetCore.Http.BadHttpRequestException("Unexpected end of request content.", 400);
        }
    }

    [Fact]
    public void A_container_replace_with_a_partition_key_that_is_not_an_object_is_refused()
    {
        // Was 500: TryGetProperty on an array threw InvalidOperationException.
        BadRequest(new HostileRequest("PUT", $"/dbs/fuzz/colls/{HostileEmulator.Offered}", [], Utf8("{\"\":\"\",\"partitionKey\":[]}")), "partitionKey");
    }

    [Fact]
    public void Autoscale_settings_that_are_not_an_object_are_refused()
    {
        BadRequest(new HostileRequest("POST", "/dbs/scratch/colls", [new("x-ms-cosmos-offer-autopilot-settings", "[]")],
            Utf8("{\"id\":\"autoscale-array\",\"partitionKey\":{\"paths\":[\"/pk\"],\"kind\":\"Hash\"}}")), "x-ms-cosmos-offer-autopilot-settings");
    }

    [Fact]
    public void Autoscale_settings_with_an_unpaired_surrogate_are_refused()
    {
        // Was 500: JsonDocument.Parse threw ArgumentException transcoding the header. Only a client that
        // hands the pipeline such a string can send it (HTTP/1.1 header values are ASCII), so it goes in directly.
        var request = new HostileRequest("POST", "/dbs", [new("x-ms-cosmos-offer-autopilot-settings", "{\"maxThroughput\":\"\ud83d\"}")], Utf8("{\"id\":\"autoscale-surrogate\"}"));
        var response = emulator.Direct(request);

        Verdict.BadRequest(request, response, "x-ms-cosmos-offer-autopilot-settings");
    }

    [Fact]
    public void A_hybrid_row_segment_length_outside_the_body_is_refused()
    {
        // Was 500: a negative segment length moved the reader before the start of the body.
        BadRequest(Batch(Convert.FromHexString("81F0D8FF7F0081F1D8FF")), "segment");
    }

    [Fact]
    public void A_hybrid_row_field_length_over_int_max_is_refused()
    {
        // Was 500: checked((int)length) threw OverflowException for a variable-length integer of 2^32 - 1.
        var row = new List<byte> { 0x81 };
        row.AddRange(HybridRow.Int32(2145473648));
        row.Add(0b111);
        row.AddRange(HybridRow.Int32(0));
        row.AddRange(HybridRow.Int32(3));
        row.AddRange([0xFF, 0xFF, 0xFF, 0xFF, 0x0F]);
        var body = new List<byte> { 0x81 };
        body.AddRange(HybridRow.Int32(2147473648));
        body.Add(1);
        body.AddRange(HybridRow.Int32(10));
        body.Add(0x81);
        body.AddRange(HybridRow.Int32(2147473649));
        body.AddRange(HybridRow.Int32(row.Count));
        body.AddRange(HybridRow.Int32(0));
        body.AddRange(row);
        BadRequest(Batch([.. body]), "past its end");
    }

    [Fact]
    public void A_batch_operation_type_that_lists_two_types_is_refused()
    {
        // Enum.TryParse read "Delete,Read" as the undefined value 6, which then wrote an item without a body (500).
        BadRequest(new HostileRequest("POST", ItemsDocs, [new("x-ms-cosmos-is-batch-request", "True"), new("x-ms-cosmos-batch-atomic", "True"), Key("[\"p1\"]")],
            Utf8("[{\"operationType\":\"Delete,Read\",\"id\":\"seed-1\"}]")), "Delete,Read");
    }

    [Fact]
    public void A_patch_incr_by_a_number_no_double_holds_is_refused()
    {
        // Was 500: the reader turned 1e400 into infinity, which the patched item could not be written with.
        BadRequest(new HostileRequest("PATCH", ItemsDocs + "/seed-6", [Key("[\"p0\"]")], Utf8("[{\"op\":\"incr\",\"path\":\"/\",\"value\":1e400}]")), "range of a double");
    }

    [Fact]
    public void A_patch_incr_with_a_string_value_is_refused()
    {
        // Was 500: JsonValue.GetValue<double> threw on a string.
        BadRequest(new HostileRequest("PATCH", ItemsDocs + "/seed-6", [Key("[\"p0\"]")], Utf8("[{\"op\":\"incr\",\"path\":\"/n\",\"value\":\"x\"}]")), "numeric");
    }

    [Fact]
    public void A_patch_incr_that_overflows_a_double_is_refused_and_the_item_keeps_its_value()
    {
        emulator.ResetSeeds();
        var path = ItemsDocs + "/seed-3";
        var set = emulator.Send(new HostileRequest("PATCH", path, [Key("[\"p0\"]")], Utf8("[{\"op\":\"set\",\"path\":\"/n\",\"value\":1.7976931348623157e308}]")));
        BadRequest(new HostileRequest("PATCH", path, [Key("[\"p0\"]")], Utf8("[{\"op\":\"incr\",\"path\":\"/n\",\"value\":1.7976931348623157e308}]")), "range of a double");
        var read = emulator.Send(new HostileRequest("GET", path, [Key("[\"p0\"]")]));

        Assert.Equal(200, set.Status);
        Assert.Equal(double.MaxValue, JsonDocument.Parse(read.Body).RootElement.GetProperty("n").GetDouble());
    }

    [Fact]
    public void A_patch_move_from_the_id_is_refused()
    {
        // Was a stored item without an id: "move" checked only its target path against the system properties.
        BadRequest(new HostileRequest("PATCH", ItemsDocs + "/seed-3", [Key("[\"p0\"]")], Utf8("[{\"op\":\"move\",\"from\":\"/id\",\"path\":\"/x\"}]")), "/id");
    }

    [Fact]
    public void A_patch_move_from_an_empty_path_is_refused()
    {
        // Was 500: an empty 'from' has no last segment (IndexOutOfRangeException).
        BadRequest(new HostileRequest("PATCH", "/" + HostileEmulator.HierarchicalLink + "/docs/seed-7", [Key("[\"t1\",\"u1\",\"s7\"]")],
            Utf8("{\"operations\":[{\"op\":\"move\",\"path\":\"/\",\"from\":\"\"}]}")), "'from' path");
    }

    [Fact]
    public void A_container_definition_naming_a_property_twice_is_refused()
    {
        // Was 500: JsonObject threw ArgumentException on the duplicate key.
        BadRequest(new HostileRequest("POST", "/dbs/scratch/colls", [], Utf8("{\"id\":\"\",\"partitionKey\":{\"paths\":[\"/K\"]},\"id\":\"p\"}")), "Duplicate property 'id'");
    }

    [Fact]
    public void A_container_whose_id_is_not_ascii_is_served()
    {
        // Was 500: the id went into the x-ms-alt-content-path header, which Kestrel refuses to send with non-ASCII characters.
        var created = emulator.Send(HostileEmulator.Post("dbs/scratch/colls", Utf8("{\"id\":\"çé 中\",\"partitionKey\":{\"paths\":[\"/pk\"],\"kind\":\"Hash\"}}")));
        var read = emulator.Send(new HostileRequest("GET", "/dbs/scratch/colls/" + Uri.EscapeDataString("çé 中"), []));

        Assert.Contains(created.Status, new[] { 201, 409 });
        Assert.Equal(200, read.Status);
    }

    [Fact]
    public void A_sum_that_overflows_a_double_is_undefined()
    {
        // Was 500: the sum, infinity, could not be written as JSON.
        var key = Key("[\"overflow\"]");
        foreach (var id in new[] { "big-1", "big-2" })
        {
            HostileEmulator.Expect(201, 200, emulator.Send(new HostileRequest("POST", ItemsDocs, [key, new("x-ms-documentdb-is-upsert", "True")],
                Utf8($"{{\"id\":\"{id}\",\"pk\":\"overflow\",\"n\":1.7976931348623157e308}}"))));
        }

        var response = emulator.Send(HostileEmulator.Query(HostileEmulator.ItemsLink, "SELECT VALUE SUM(c.n) FROM c", [], ("x-ms-documentdb-partitionkey", "[\"overflow\"]")));

        Assert.Equal(200, response.Status);
        Assert.Equal(0, JsonDocument.Parse(response.Body).RootElement.GetProperty("Documents").GetArrayLength());
    }

    [Fact]
    public void A_continuation_that_passed_a_negative_number_of_groups_is_refused()
    {
        // Was 500: a GROUP BY page started at a negative group index.
        var token = System.Buffers.Text.Base64Url.EncodeToString(Utf8("{\"s\":-1,\"n\":-5,\"k\":null}"));
        BadRequest(HostileEmulator.Query(HostileEmulator.ItemsLink, "SELECT c.n FROM c GROUP BY c.n", [], ("x-ms-documentdb-partitionkey", "[\"p1\"]"), ("x-ms-continuation", token)),
            "continuation");
    }

    [Fact]
    public void An_unknown_emulator_endpoint_is_a_404_in_the_error_shape()
    {
        var request = new HostileRequest("GET", "/_emulator", [], Sign: false);
        var response = Verdict.Check(request, emulator.Send(request));

        Assert.Equal(404, response.Status);
        Assert.Contains("/_emulator/health", response.ErrorMessage(), StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("(", ")")]
    [InlineData("NOT (", ")")]
    [InlineData("ABS(", ")")]
    [InlineData("[", "]")]
    public void A_query_nested_deeper_than_the_limit_is_refused_and_one_at_the_limit_is_served(string open, string close)
    {
        // A recursive-descent parser and evaluator without a bound overflow the stack on deep nesting,
        // which ends the process, not just the request.
        var key = ("x-ms-documentdb-partitionkey", "[\"p1\"]");
        string Nested(int depth) => "SELECT VALUE " + HostileGen.Repeat(open, depth) + "true" + HostileGen.Repeat(close, depth) + " FROM c";
        var withinLimit = emulator.Send(HostileEmulator.Query(HostileEmulator.ItemsLink, Nested(100), [], key));
        BadRequest(HostileEmulator.Query(HostileEmulator.ItemsLink, Nested(10_000), [], key), "levels deep");

        Assert.Equal(200, withinLimit.Status);
    }

    [Fact]
    public void A_chain_longer_than_the_nesting_limit_is_refused_and_one_within_it_is_served()
    {
        // Chains are built in a loop but evaluated recursively: 1 + 1 + … is as deep as it is long.
        var key = ("x-ms-documentdb-partitionkey", "[\"p1\"]");
        string Chain(int length) => "SELECT VALUE 0" + HostileGen.Repeat(" + 1", length) + " FROM c";
        var withinLimit = emulator.Send(HostileEmulator.Query(HostileEmulator.ItemsLink, Chain(200), [], key));
        BadRequest(HostileEmulator.Query(HostileEmulator.ItemsLink, Chain(10_000), [], key), "levels deep");

        Assert.Equal(200, withinLimit.Status);
        Assert.Equal(200, JsonDocument.Parse(withinLimit.Body).RootElement.GetProperty("Documents")[0].GetInt32());
    }

    [Fact]
    public void A_query_text_over_the_input_limit_is_refused()
    {
        BadRequest(HostileEmulator.Query(HostileEmulator.ItemsLink, "SELECT * FROM c WHERE c.s = '" + new string('x', 600_000) + "'", [],
            ("x-ms-documentdb-partitionkey", "[\"p1\"]")), "maxSqlQueryInputLength");
    }

    [Fact]
    public void Headers_far_over_the_servers_limit_are_answered_431_even_while_the_client_is_still_sending()
    {
        // 600 KB of partition key: Kestrel answers 431 after its 32 KB and closes while the client still writes.
        var response = emulator.Send(new HostileRequest("GET", $"/{HostileEmulator.ItemsLink}/docs/seed-1", [Key(HostileGen.Repeat("{\"a\":", 100_000))]));

        Assert.Equal(431, response.Status);
        emulator.AssertHealthy();
    }

    [Theory]
    [InlineData("SELECT VALUE 1e999 FROM c", "range of a double")]
    [InlineData("SELECT VALUE '\\ud800' FROM c", "UTF-16")]
    public void A_literal_the_answer_could_not_hold_is_refused(string query, string naming)
    {
        BadRequest(HostileEmulator.Query(HostileEmulator.ItemsLink, query, [], ("x-ms-documentdb-partitionkey", "[\"p1\"]")), naming);
    }

    private static HostileRequest Batch(byte[] body) =>
        new("POST", ItemsDocs, [new("x-ms-cosmos-is-batch-request", "True"), new("x-ms-cosmos-batch-atomic", "True"), Key("[\"p0\"]")], body);
}
