using System.Net;
using System.Text;
using System.Xml.Linq;
using Azure.Messaging.ServiceBus;
using DroneDelivery.TestSupport.HostileInput;
using DroneDelivery.Emulators.ServiceBus.Administration;
using DroneDelivery.Emulators.ServiceBus.Broker;
using DroneDelivery.TestSupport;
using FsCheck;
using FsCheck.Fluent;
using Microsoft.AspNetCore.Http;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.ServiceBus.Tests.HostileInput;

/// <summary>
/// Hostile administration requests: any method, on paths of every kind and of odd characters, with descriptions whose
/// settings hold values of any shape, unknown and repeated elements, hostile SQL, truncated or mutated XML, DTDs, deep
/// nesting and oversized bodies, signed or not. Each gets a status the service uses, with its Error body when it is a
/// refusal; never a 500, a hang or an exception; and a queue no request names keeps carrying messages.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class AdministrationTests(ITestOutputHelper output)
{
    private const int OverTheWire = 1_000;

    /// <summary>The queue no generated request names: it must stay as it was.</summary>
    private const string Canary = "canary";

    private static readonly HashSet<int> Statuses = [200, 201, 400, 401, 403, 404, 405, 409, 413];

    private static readonly string[] Paths =
    [
        "q1", "q2", "nested/q3", "t1", "t1/Subscriptions/s1", "t1/Subscriptions/s1/Rules/r1", "t1/Subscriptions/s1/Rules/$Default",
        "t1/Subscriptions/s1/Rules", "t1/Subscriptions", "t2/subscriptions/s2", "$Resources/queues", "$Resources/topics", "$Resources/other",
        "$namespaceinfo", "q1/$DeadLetterQueue", "t1/Subscriptions/s1/Rules/r1/extra", string.Empty,
    ];

    private static readonly string[] QueueFields =
    [
        "LockDuration", "MaxSizeInMegabytes", "RequiresDuplicateDetection", "RequiresSession", "DefaultMessageTimeToLive",
        "DeadLetteringOnMessageExpiration", "DuplicateDetectionHistoryTimeWindow", "MaxDeliveryCount", "EnableBatchedOperations",
        "IsAnonymousAccessible", "AuthorizationRules", "Status", "ForwardTo", "UserMetadata", "SupportOrdering", "AutoDeleteOnIdle",
        "EnablePartitioning", "ForwardDeadLetteredMessagesTo", "EnableExpress", "MaxMessageSizeInKilobytes", "FilteringMessagesBeforePublishing",
        "EnableSubscriptionPartitioning", "DeadLetteringOnFilterEvaluationExceptions", "Unknown", "CountDetails",
    ];

    /// <summary>One request: method, path (unescaped), query, body, whether it is an update, and its Authorization header ("" = valid).</summary>
    public sealed record Case(string Method, string Path, string Query, string? Body, bool Update, string? Token)
    {
        public override string ToString() =>
            $"{Method} '{Path}'?{Query}{(Update ? " If-Match" : string.Empty)} token={(Token is "" ? "valid" : Token ?? "none")} body={(Body is null ? "none" : Body.Length > 300 ? Body[..300] + $"... ({Body.Length} chars)" : Body)}";
    }

    private static Gen<string> Value =>
        AmqpGen.Pick(
            (3, Gen.Elements("PT1M", "PT0S", "PT5S", "PT10M", "P10675199DT2H48M5.4775807S", "PT-1S", "P99999999D", "1", "0", "-1", "10", "1024", "16384",
                "2147483648", "99999999999999999999", "true", "false", "yes", "Active", "Disabled", "SendDisabled", string.Empty, "  PT1M  ")),
            (2, AmqpGen.Text.Select(XmlEscaped)),
            (1, Gen.Elements("<Nested><Deeper>1</Deeper></Nested>", "<AuthorizationRule/>", "<![CDATA[PT1M]]>", "&amp;", "<i:x xmlns:i=\"urn:x\"/>")));

    private static Gen<string> Field =>
        Gen.Zip(Gen.Elements(QueueFields), Value).Select(p => $"<{p.Item1}>{p.Item2}</{p.Item1}>");

    private static Gen<string> Rule =>
        Gen.Zip(
                Gen.Zip(Gen.Elements("SqlFilter", "TrueFilter", "FalseFilter", "CorrelationFilter", "Other", string.Empty), SqlGen.Expression.Select(XmlEscaped)),
                Gen.Zip(Gen.Elements("string", "int", "long", "boolean", "double", "dateTime", "duration", "decimal"), Value))
            .Select(p => $"<Filter i:type=\"{p.Item1.Item1}\" xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\"><SqlExpression>{p.Item1.Item2}</SqlExpression>"
                + $"<CorrelationId>{p.Item2.Item2}</CorrelationId><Properties><KeyValueOfstringanyType><Key>k</Key><Value i:type=\"d6p1:{p.Item2.Item1}\" xmlns:d6p1=\"http://www.w3.org/2001/XMLSchema\">{p.Item2.Item2}</Value></KeyValueOfstringanyType></Properties></Filter>"
                + $"<Action i:type=\"SqlRuleAction\" xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\"><SqlExpression>{p.Item1.Item2}</SqlExpression></Action><Name>r1</Name>");

    /// <summary>A description of any kind, its content generated settings (or a rule), wrapped as an Atom entry.</summary>
    private static Gen<string> Description =>
        Gen.Zip(Gen.Elements("QueueDescription", "TopicDescription", "SubscriptionDescription", "RuleDescription", "NamespaceInfo"),
                AmqpGen.Pick((4, Gen.Choose(0, 8).SelectMany(n => Gen.ArrayOf(Field, n)).Select(string.Concat)), (2, Rule), (1, Field.Select(f => $"<DefaultRuleDescription>{f}</DefaultRuleDescription>"))))
            .Select(p => $"<entry xmlns=\"http://www.w3.org/2005/Atom\"><content type=\"application/xml\"><{p.Item1} xmlns=\"http://schemas.microsoft.com/netservices/2010/10/servicebus/connect\">{p.Item2}</{p.Item1}></content></entry>");

    private static Gen<string?> Body =>
        AmqpGen.Pick(
            (8, Description.Select(d => (string?)d)),
            (2, Gen.Zip(Description, Gen.Choose(0, 400)).Select(p => (string?)p.Item1[..Math.Min(p.Item2, p.Item1.Length)])),
            (1, Gen.Zip(Description, Gen.Zip(AmqpGen.Text, Gen.Choose(0, 300))).Select(p => (string?)p.Item1.Insert(Math.Min(p.Item2.Item2, p.Item1.Length), p.Item2.Item1))),
            (1, Gen.Elements<string?>(
                null,
                string.Empty,
                "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY a \"aaaa\"><!ENTITY b \"&a;&a;&a;&a;\">]><entry xmlns=\"http://www.w3.org/2005/Atom\">&b;</entry>",
                "<?xml version=\"1.0\"?><!DOCTYPE x SYSTEM \"file:///etc/passwd\"><entry/>",
                string.Concat(Enumerable.Repeat("<a>", 5_000)) + string.Concat(Enumerable.Repeat("</a>", 5_000)),
                "<entry xmlns=\"http://www.w3.org/2005/Atom\"><content>" + new string('x', 300 * 1024) + "</content></entry>",
                "{\"LockDuration\":\"PT1M\"}")),
            (1, AmqpGen.Text.Select(t => (string?)t)));

    private static Gen<string> Path =>
        AmqpGen.Pick(
            (6, Gen.Elements(Paths)),
            (2, Gen.Choose(1, 4).SelectMany(n => Gen.ArrayOf(AmqpGen.Text, n)).Select(parts => string.Join('/', parts))),
            (1, Gen.Elements(Paths).SelectMany(p => AmqpGen.Text.Select(t => p + "/" + t))));

    private static Gen<string> Query =>
        AmqpGen.Pick(
            (8, Gen.Constant("api-version=2021-05")),
            (2, Gen.Zip(Gen.Elements("$skip", "$top", "enrich"), Gen.Elements("0", "1", "-1", "100", "2147483648", "x", string.Empty, "true"))
                .Select(p => $"api-version=2021-05&{Uri.EscapeDataString(p.Item1)}={Uri.EscapeDataString(p.Item2)}")),
            (1, AmqpGen.Text.Select(t => "api-version=" + Uri.EscapeDataString(t))));

    private static Gen<string?> Token =>
        AmqpGen.Pick(
            (10, Gen.Constant<string?>(string.Empty)),
            (1, Gen.Elements<string?>(null, "Bearer x", "SharedAccessSignature sr=a&sig=b&se=1&skn=RootManageSharedAccessKey", "SharedAccessSignature ")),
            (1, AmqpGen.Text.Select(t => (string?)t)));

    private static Arbitrary<Case> Cases => Arb.From(
        Gen.Zip(Gen.Zip(AmqpGen.Pick((10, Gen.Elements("GET", "PUT", "DELETE")), (1, Gen.Elements("POST", "PATCH", "OPTIONS"))), Gen.Zip(Path, Query)),
                Gen.Zip(Body, Gen.Zip(Gen.Elements(true, false), Token)))
            .Select(p => new Case(p.Item1.Item1, p.Item1.Item2.Item1, p.Item1.Item2.Item2, p.Item2.Item1, p.Item2.Item2.Item1, p.Item2.Item2.Item2)));

    [Fact]
    public async Task Administration_answers_hostile_requests_with_the_services_statuses_and_error_bodies()
    {
        var options = new ServiceBusEmulatorOptions { Queues = [new QueueOptions { Name = Canary }] };
        var direct = new AdministrationEndpoint(new Namespace(options), options);
        await using var emulator = await ServiceBusEmulator.StartAsync(options);
        using var http = new HttpClient { BaseAddress = emulator.HttpEndpoint, Timeout = HostileBroker.HangBound };
        await using var client = EmulatorScope.CreateClient(emulator.ConnectionString);
        await using var sender = client.CreateSender(Canary);
        await using var receiver = client.CreateReceiver(Canary);
        var token = SharedAccessSignature.Create("https://127.0.0.1", options.SharedAccessKeyName, options.SharedAccessKey, TimeSpan.FromHours(1)).ToString();
        var refusals = 0;
        var marker = 0;

        HostileInputRunner.Report(output, "administration requests", "every answer a status the service uses, refusals with an Error body; no 500, hang or exception",
            ("through the endpoint", () => HostileInputRunner.Run("administration", Cases, HostileInputRunner.Cases, c =>
            {
                var (answer, error) = HostileInputRunner.Bounded(c, HostileBroker.HangBound, () => Direct(direct, c, token).GetAwaiter().GetResult());
                if (error is not null)
                {
                    throw new InvalidOperationException($"{c}: {error.GetType().Name} escaped: {error}");
                }

                Check(c, answer.Status, answer.Body, emptyRefusalAllowed: false);
                refusals += answer.Status >= 400 ? 1 : 0;
            }, () => CanaryIsThere(direct, token))),
            ("over HTTP", () => HostileInputRunner.Run("administration over HTTP", Cases, OverTheWire, c =>
            {
                var (status, body) = OverHttp(http, c, token).GetAwaiter().GetResult();

                // Kestrel itself refuses, before the API sees them, a request line it cannot read (a NUL in the path: 400), a URL
                // over its 8 KB (414) and headers over its limits (431), with an empty body.
                if (status is 414 or 431 && body.Length == 0)
                {
                    return;
                }

                Check(c, status, body, emptyRefusalAllowed: status == 400);
            }, () =>
            {
                var text = $"healthy-{++marker}";
                sender.SendMessageAsync(new ServiceBusMessage(text)).GetAwaiter().GetResult();
                var received = receiver.ReceiveMessageAsync(HostileBroker.HangBound).GetAwaiter().GetResult();
                Assert.Equal(text, received?.Body.ToString());
                receiver.CompleteMessageAsync(received!).GetAwaiter().GetResult();
            })));

        output.WriteLine($"{refusals:N0} requests refused through the endpoint");
        Assert.True(refusals > 0);
    }

    private static async Task<(int Status, string Body)> Direct(AdministrationEndpoint endpoint, Case c, string token)
    {
        var context = new DefaultHttpContext();
        context.Request.Method = c.Method;
        context.Request.Scheme = "http";
        context.Request.Host = new HostString("127.0.0.1", 5300);
        context.Request.Path = new PathString("/" + c.Path);
        context.Request.QueryString = new QueryString("?" + c.Query);
        if (c.Token is not null)
        {
            context.Request.Headers.Authorization = c.Token.Length == 0 ? token : c.Token;
        }

        if (c.Update)
        {
            context.Request.Headers.IfMatch = "*";
        }

        if (c.Body is not null)
        {
            var bytes = Encoding.UTF8.GetBytes(c.Body);
            context.Request.Body = new MemoryStream(bytes);
            context.Request.ContentLength = bytes.Length;
        }

        using var response = new MemoryStream();
        context.Response.Body = response;
        await endpoint.HandleAsync(context);
        return (context.Response.StatusCode, Encoding.UTF8.GetString(response.ToArray()));
    }

    private static async Task<(int Status, string Body)> OverHttp(HttpClient http, Case c, string token)
    {
        // Absolute, so that a path starting with an empty segment is not read as a host; header values keep what HTTP can carry.
        var path = string.Join('/', c.Path.Split('/').Select(Uri.EscapeDataString));
        using var request = new HttpRequestMessage(new HttpMethod(c.Method), new Uri($"{http.BaseAddress!.AbsoluteUri}{path}?{c.Query}"));
        if (c.Token is not null)
        {
            request.Headers.TryAddWithoutValidation("Authorization", c.Token.Length == 0 ? token : new string([.. c.Token.Where(ch => ch is >= ' ' and <= '~')]));
        }

        if (c.Update)
        {
            request.Headers.TryAddWithoutValidation("If-Match", "*");
        }

        if (c.Body is not null)
        {
            request.Content = new StringContent(c.Body, Encoding.UTF8, "application/atom+xml");
        }

        try
        {
            using var response = await http.SendAsync(request);
            return ((int)response.StatusCode, await response.Content.ReadAsStringAsync());
        }
        catch (TaskCanceledException e)
        {
            throw new TimeoutException($"{c}: no answer within {HostileBroker.HangBound.TotalSeconds} s (a hang).", e);
        }
    }

    private static void Check(Case c, int status, string body, bool emptyRefusalAllowed)
    {
        if (!Statuses.Contains(status))
        {
            throw new InvalidOperationException($"{c}: answered {status}: {body}");
        }

        if (body.Length == 0)
        {
            if (status >= 400 && !emptyRefusalAllowed)
            {
                throw new InvalidOperationException($"{c}: {status} without an Error body.");
            }

            return;
        }

        var root = XElement.Parse(body);
        var expected = status >= 400 ? "Error" : root.Name == XName.Get("feed", "http://www.w3.org/2005/Atom") ? "feed" : "entry";
        if (root.Name.LocalName != expected
            || (status >= 400 && (root.Element("Code")?.Value != status.ToString(System.Globalization.CultureInfo.InvariantCulture) || string.IsNullOrWhiteSpace(root.Element("Detail")?.Value))))
        {
            throw new InvalidOperationException($"{c}: answered {status} with {body}");
        }
    }

    private static void CanaryIsThere(AdministrationEndpoint endpoint, string token)
    {
        var (status, body) = Direct(endpoint, new Case("GET", Canary, "api-version=2021-05", null, false, string.Empty), token).GetAwaiter().GetResult();
        Assert.Equal(200, status);
        Assert.Equal("entry", XElement.Parse(body).Name.LocalName);
    }

    /// <summary>Markup characters escaped; characters XML cannot hold are left in, to be refused.</summary>
    private static string XmlEscaped(string text) =>
        text.Replace("&", "&amp;", StringComparison.Ordinal).Replace("<", "&lt;", StringComparison.Ordinal).Replace(">", "&gt;", StringComparison.Ordinal);
}
