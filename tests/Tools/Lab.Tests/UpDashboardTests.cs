using System.Net;
using System.Net.Http.Headers;
using System.Security.Cryptography;
using System.Text.Json;
using System.Text.RegularExpressions;
using DroneDelivery.LocalProcesses;
using DroneDelivery.TestSupport;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// <c>up --dashboard</c> as a user meets it: the printed token reads an invoice through the printed gateway, the
/// invoice's trace is in the Aspire dashboard with the gateway's span and its three calls (each reaching its
/// backend), and Ctrl-C leaves no process and no port behind.
/// </summary>
[Trait("Category", "LabFaults")]
public sealed partial class UpDashboardTests
{
    /// <summary>Starting the system at A4 (seed, warm-up) and stopping it; a minute each on a busy machine.</summary>
    internal static readonly TimeSpan Bound = TimeSpan.FromMinutes(3);

    [Fact]
    public async Task The_printed_token_reads_an_invoice_whose_trace_the_dashboard_shows_and_Ctrl_C_leaves_nothing()
    {
        var output = Directory.CreateTempSubdirectory("dronedelivery-up-").FullName;
        try
        {
            using var lab = new LabProcess("up", "--step", "A4", "--dashboard", "--output", output);
            Assert.True(
                await Eventually.TrueAsync(() => CurlLine().IsMatch(lab.Output) || lab.Output.Contains("could not run", StringComparison.Ordinal), Bound / 2, TimeSpan.FromMilliseconds(200)),
                lab.Output);
            var printed = lab.Output;
            var curl = CurlLine().Match(printed);
            Assert.True(curl.Success, printed);
            var dashboard = new Uri(DashboardLine().Match(printed).Groups["url"].Value);
            var (token, invoice) = (curl.Groups["token"].Value, new Uri(curl.Groups["url"].Value));

            // The trace is the test's own: the gateway continues the caller's trace context.
            var traceId = Convert.ToHexStringLower(RandomNumberGenerator.GetBytes(16));
            using var http = new HttpClient { Timeout = TimeSpan.FromSeconds(30) };
            using (var request = new HttpRequestMessage(HttpMethod.Get, invoice))
            {
                request.Headers.Authorization = new AuthenticationHeaderValue("Bearer", token);
                request.Headers.Add("traceparent", $"00-{traceId}-{Convert.ToHexStringLower(RandomNumberGenerator.GetBytes(8))}-01");
                using var response = await http.SendAsync(request);
                Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            }

            // Spans arrive in the exporters' batches (every 5 s): the complete trace is waited for.
            Trace? trace = null;
            Assert.True(
                await Eventually.TrueAsync(
                    async () => (trace = await ReadTraceAsync(http, dashboard, traceId)) is { } t && t.FanOutComplete,
                    TimeSpan.FromMinutes(1),
                    TimeSpan.FromSeconds(1)),
                trace?.ToString() ?? "no trace " + traceId);

            // What a user's browser shows: the trace's page in the dashboard, and the gateway's API reference.
            var screenshots = RepositoryLayout.InRepository("artifacts", "screenshots");
            Directory.CreateDirectory(screenshots);
            await using (var chromium = await Chromium.StartAsync())
            {
                var tracePage = await chromium.RenderAsync(
                    new Uri(dashboard, $"traces/detail/{traceId}"), Path.Combine(screenshots, "dashboard-trace-A4.png"), TimeSpan.FromSeconds(30),
                    "GET dronescheduler summary", "Query utilization-by-owner");
                Assert.Contains("GET /api/invoices/{ownerId}", tracePage, StringComparison.Ordinal);
                Assert.Contains("GET dronescheduler summary", tracePage, StringComparison.Ordinal);
                Assert.Contains("Query utilization-by-owner", tracePage, StringComparison.Ordinal);

                var reference = await chromium.RenderAsync(
                    new Uri(invoice, "/scalar/v1"), Path.Combine(screenshots, "api-reference-gateway.png"), TimeSpan.FromSeconds(30),
                    "Drone Delivery gateway", "An owner's invoice for a month");
                Assert.Contains("Drone Delivery gateway", reference, StringComparison.Ordinal);
                Assert.Contains("An owner's invoice for a month", reference, StringComparison.Ordinal);
            }

            lab.Interrupt();
            // Ctrl-C is how up ends, not an interruption of its work: success.
            Assert.Equal(0, await lab.ExitCodeAsync(Bound / 2));
            Assert.True(
                await Eventually.TrueAsync(() => lab.Leftovers().Count == 0, TimeSpan.FromSeconds(20), TimeSpan.FromMilliseconds(200)),
                string.Join(Environment.NewLine, lab.Leftovers()));
            foreach (var port in new[] { dashboard.Port, invoice.Port })
            {
                Assert.False(await AcceptsAsync(port), $"port {port} still accepts connections");
            }
        }
        finally
        {
            Directory.Delete(output, recursive: true);
        }
    }

    /// <summary>The trace as the dashboard's telemetry API returns it (OTLP JSON), or null while it has none of it.</summary>
    private static async Task<Trace?> ReadTraceAsync(HttpClient http, Uri dashboard, string traceId)
    {
        using var response = await http.GetAsync(new Uri(dashboard, $"api/telemetry/traces/{traceId}"));
        if (response.StatusCode == HttpStatusCode.NotFound)
        {
            return null;
        }

        response.EnsureSuccessStatusCode();
        using var document = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
        var spans = new List<Span>();
        foreach (var resource in document.RootElement.GetProperty("data").GetProperty("resourceSpans").EnumerateArray())
        {
            var service = resource.GetProperty("resource").GetProperty("attributes").EnumerateArray()
                .First(a => a.GetProperty("key").GetString() == "service.name").GetProperty("value").GetProperty("stringValue").GetString()!;
            foreach (var scope in resource.GetProperty("scopeSpans").EnumerateArray())
            {
                foreach (var span in scope.GetProperty("spans").EnumerateArray())
                {
                    spans.Add(new Span(
                        service,
                        span.GetProperty("name").GetString()!,
                        span.GetProperty("spanId").GetString()!,
                        span.TryGetProperty("parentSpanId", out var parent) ? parent.GetString() ?? "" : ""));
                }
            }
        }

        return new Trace(spans);
    }

    private static async Task<bool> AcceptsAsync(int port)
    {
        using var socket = new System.Net.Sockets.Socket(System.Net.Sockets.SocketType.Stream, System.Net.Sockets.ProtocolType.Tcp);
        try
        {
            await socket.ConnectAsync(IPAddress.Loopback, port);
            return true;
        }
        catch (System.Net.Sockets.SocketException)
        {
            return false;
        }
    }

    [GeneratedRegex("""curl -H "Authorization: Bearer (?<token>[A-Za-z0-9_\-\.]+)" "(?<url>http://127\.0\.0\.1:\d+/api/invoices/[^"]+)"\r?\n""")]
    private static partial Regex CurlLine();

    [GeneratedRegex(@"dashboard  (?<url>http://127\.0\.0\.1:\d+/)")]
    private static partial Regex DashboardLine();

    private sealed record Span(string Service, string Name, string Id, string ParentId);

    private sealed record Trace(IReadOnlyList<Span> Spans)
    {
        private static readonly string[] Backends = ["delivery", "package", "dronescheduler"];

        /// <summary>
        /// The gateway's server span with one child per backend (its three calls), and under each a client call
        /// whose server span is in that backend's own service; under DroneScheduler's, A4's one query as the Cosmos DB
        /// emulator served it, named after what its model did.
        /// </summary>
        public bool FanOutComplete =>
            Spans.FirstOrDefault(s => s.Service == "gateway" && s.Name == "GET /api/invoices/{ownerId}") is { } root
            && Backends.All(backend => Below(root, $"GET {backend} summary").Any(s => s.Service == backend))
            && Below(root, "GET dronescheduler summary").Any(s => s.Service == "cosmos-emulator" && s.Name == "Query utilization-by-owner");

        private IEnumerable<Span> Below(Span root, string call) =>
            Spans.Where(s => s.ParentId == root.Id && s.Name == call).SelectMany(s => Descendants(s.Id));

        private IEnumerable<Span> Descendants(string id) =>
            Spans.Where(s => s.ParentId == id).SelectMany(child => Descendants(child.Id).Prepend(child));

        public override string ToString() =>
            string.Join(Environment.NewLine, Spans.Select(s => $"{s.Service}: {s.Name} ({s.Id} under {s.ParentId})"));
    }
}
