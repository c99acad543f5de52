using DroneDelivery.Services.Tests.HttpFiles;

namespace DroneDelivery.Services.Tests;

/// <summary>
/// The reader and the checker of the <c>.http</c> files on samples, so that <see cref="HttpFileTests"/> can
/// fail: a route without a request, a misspelt path, a wrong method, another service's address or an
/// undefined variable is each reported, naming the file and line.
/// </summary>
public sealed class HttpFileCheckTests
{
    private static readonly ServiceRoute[] Routes =
    [
        new("gateway", "GET", "/api/invoices/{ownerId}"),
        new("ingestion", "POST", "/api/deliveryrequests"),
        new("ingestion", "DELETE", "/api/deliveryrequests/{id}"),
    ];

    private const string Sample = """
        # A comment
        @gateway = http://127.0.0.1:8080
        @ingestion = http://127.0.0.1:8081
        @token = a-token
        @owner = owner-0001
        // another comment
        @deliveryId = delivery-0001

        ### GetInvoice
        GET {{gateway}}/api/invoices/{{owner}}?year=2026&month=3 HTTP/1.1
        Authorization: Bearer {{token}}

        ### RequestDelivery
        POST {{ingestion}}/api/deliveryrequests
        Authorization: Bearer {{token}}
        Content-Type: application/json

        {
          "ownerId": "{{owner}}",
          "packageId": "package-{{$timestamp}}"
        }

        ### CancelDeliveryRequest
        DELETE {{ingestion}}/api/deliveryrequests/{{deliveryId}}
        Authorization: Bearer {{token}}

        """;

    [Fact]
    public void A_file_reads_as_its_variables_and_requests_with_their_headers_and_bodies()
    {
        var file = HttpFile.Parse("sample.http", Sample);

        Assert.Empty(file.Problems);
        Assert.Equal(["deliveryId", "gateway", "ingestion", "owner", "token"], file.Variables.Keys.Order(StringComparer.Ordinal));
        Assert.Equal("http://127.0.0.1:8080", file.Variables["gateway"]);
        Assert.Equal(
            [("GET", "{{gateway}}/api/invoices/{{owner}}?year=2026&month=3", 10, "GetInvoice"), ("POST", "{{ingestion}}/api/deliveryrequests", 14, "RequestDelivery"), ("DELETE", "{{ingestion}}/api/deliveryrequests/{{deliveryId}}", 24, "CancelDeliveryRequest")],
            file.Requests.Select(r => (r.Method, r.Url, r.Line, r.Title)));
        Assert.Equal([new("Authorization", "Bearer {{token}}"), new("Content-Type", "application/json")], file.Requests[1].Headers);
        Assert.Equal("{\n  \"ownerId\": \"{{owner}}\",\n  \"packageId\": \"package-{{$timestamp}}\"\n}", file.Requests[1].Body);
        Assert.Null(file.Requests[0].Body);
    }

    [Fact]
    public void Variables_are_substituted_the_given_ones_first_and_the_timestamp_is_unix_seconds()
    {
        var file = HttpFile.Parse("sample.http", Sample);
        var problems = new List<string>();

        var body = file.Substitute(file.Requests[1].Body!, new Dictionary<string, string> { ["owner"] = "owner-0042" }, DateTimeOffset.FromUnixTimeSeconds(1_700_000_000), problems, "here");
        var url = file.Substitute(file.Requests[0].Url, new Dictionary<string, string>(), DateTimeOffset.UnixEpoch, problems, "here");
        var unknown = file.Substitute("{{gateway}}/{{ownr}}", new Dictionary<string, string>(), DateTimeOffset.UnixEpoch, problems, "here");

        Assert.Equal("{\n  \"ownerId\": \"owner-0042\",\n  \"packageId\": \"package-1700000000\"\n}", body);
        Assert.Equal("http://127.0.0.1:8080/api/invoices/owner-0001?year=2026&month=3", url);
        Assert.Equal("http://127.0.0.1:8080/{{ownr}}", unknown);
        Assert.Equal(["here: {{ownr}} names no variable of sample.http"], problems);
    }

    [Fact]
    public void The_sample_covers_its_routes() =>
        Assert.Empty(HttpFileCoverage.Problems([HttpFile.Parse("sample.http", Sample)], Routes));

    [Fact]
    public void A_route_without_a_request_is_reported()
    {
        var removed = Sample[..Sample.IndexOf("### CancelDeliveryRequest", StringComparison.Ordinal)];

        var problems = HttpFileCoverage.Problems([HttpFile.Parse("sample.http", removed)], Routes);

        Assert.Equal(["No request of the .http files calls DELETE /api/deliveryrequests/{id} (ingestion)"], problems);
    }

    [Fact]
    public void A_misspelt_path_is_reported_and_its_route_then_lacks_a_request()
    {
        var misspelt = Sample.Replace("/api/invoices/", "/api/invoice/", StringComparison.Ordinal);

        var problems = HttpFileCoverage.Problems([HttpFile.Parse("sample.http", misspelt)], Routes);

        Assert.Equal(2, problems.Count);
        Assert.StartsWith("sample.http:10 (GetInvoice): GET /api/invoice/owner-0001 is no route of gateway", problems[0]);
        Assert.Equal("No request of the .http files calls GET /api/invoices/{ownerId} (gateway)", problems[1]);
    }

    [Fact]
    public void A_wrong_method_is_reported()
    {
        var wrong = Sample.Replace("DELETE {{ingestion}}", "PATCH {{ingestion}}", StringComparison.Ordinal);

        var problems = HttpFileCoverage.Problems([HttpFile.Parse("sample.http", wrong)], Routes);

        Assert.Contains("sample.http:24 (CancelDeliveryRequest): ingestion maps /api/deliveryrequests/delivery-0001 for DELETE, not PATCH", problems);
        Assert.Contains("No request of the .http files calls DELETE /api/deliveryrequests/{id} (ingestion)", problems);
    }

    [Fact]
    public void A_request_to_the_wrong_service_is_reported()
    {
        var elsewhere = Sample.Replace("GET {{gateway}}", "GET {{ingestion}}", StringComparison.Ordinal);

        var problems = HttpFileCoverage.Problems([HttpFile.Parse("sample.http", elsewhere)], Routes);

        Assert.Contains(problems, p => p.StartsWith("sample.http:10 (GetInvoice): GET /api/invoices/owner-0001 is no route of ingestion", StringComparison.Ordinal));
    }

    [Fact]
    public void An_address_of_no_service_and_an_undefined_variable_are_reported()
    {
        var broken = Sample
            .Replace("DELETE {{ingestion}}", "DELETE http://127.0.0.1:8081", StringComparison.Ordinal)
            .Replace("Bearer {{token}}\n\n### RequestDelivery", "Bearer {{tokne}}\n\n### RequestDelivery", StringComparison.Ordinal);

        var problems = HttpFileCoverage.Problems([HttpFile.Parse("sample.http", broken)], Routes);

        Assert.Contains("sample.http:10 (GetInvoice): {{tokne}} names no variable of sample.http", problems);
        Assert.Contains(problems, p => p.StartsWith("sample.http:24 (CancelDeliveryRequest): the URL 'http://127.0.0.1:8081/api/deliveryrequests/{{deliveryId}}' does not start with a service's address", StringComparison.Ordinal));
    }

    [Fact]
    public void Unreadable_lines_are_reported()
    {
        var broken = Sample
            .Replace("GET {{gateway}}", "FETCH {{gateway}}", StringComparison.Ordinal)
            .Replace("Content-Type: application/json", "Content-Type application/json", StringComparison.Ordinal)
            .Replace("@owner = owner-0001", "@owner = owner-0001\n@owner = owner-0002", StringComparison.Ordinal);

        var file = HttpFile.Parse("sample.http", broken);

        Assert.Equal(
            [
                "sample.http:6: the variable @owner is defined twice",
                "sample.http:11: 'FETCH {{gateway}}/api/invoices/{{owner}}?year=2026&month=3 HTTP/1.1' is no request line (METHOD URL [HTTP/1.1]), variable or comment",
                "sample.http:17: 'Content-Type application/json' is no header (Name: value)",
            ],
            file.Problems);
        Assert.Equal(file.Problems, HttpFileCoverage.Problems([file], Routes).Take(3));
    }
}
