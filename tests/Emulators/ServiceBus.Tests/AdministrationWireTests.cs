using System.Net;
using Azure.Messaging.ServiceBus.Administration;
using DroneDelivery.Emulators.ServiceBus.Metrics;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// The administration API's answers on the wire: the statuses and error bodies the service gives for a missing or
/// existing entity, a refused setting and a bad signature, and what it makes of bodies no SDK sends (malformed XML, a
/// DTD, an oversized body, unknown elements). The refused settings are also sent through the .NET SDK, which turns the
/// 400 into an <see cref="ArgumentException"/> carrying the service's text.
/// </summary>
public sealed class AdministrationWireTests
{
    [Fact]
    public async Task Missing_and_existing_entities_get_the_service_answers()
    {
        await using var scope = await AdministrationScope.StartAsync();
        using var http = new AdministrationHttp(scope.Emulator);

        var getQueue = await http.GetAsync("nowhere");
        var getSubscriptionOfMissingTopic = await http.GetAsync("nowhere/Subscriptions/s");
        var getSubscription = await http.GetAsync($"{AdministrationScope.ConfiguredTopic}/Subscriptions/nowhere");
        var getRule = await http.GetAsync($"{AdministrationScope.ConfiguredTopic}/Subscriptions/all/Rules/nowhere");
        var deleteQueue = await http.DeleteAsync("nowhere");
        var updateQueue = await http.PutAsync("nowhere", AdministrationHttp.Queue(), update: true);
        var createExisting = await http.PutAsync(EmulatorScope.Queue, AdministrationHttp.Queue());
        var created = await http.PutAsync("fresh", AdministrationHttp.Queue("<MaxDeliveryCount>3</MaxDeliveryCount>"));
        var deleted = await http.DeleteAsync("fresh");

        // A queue or topic that does not exist is an empty feed with 200; a subscription or rule below an existing topic a 404.
        Assert.Equal((HttpStatusCode.OK, "application/atom+xml;type=feed;charset=utf-8"), (getQueue.Status, getQueue.ContentType));
        Assert.Equal("feed", getQueue.Xml.Name.LocalName);
        Assert.Empty(getQueue.Xml.Elements("{http://www.w3.org/2005/Atom}entry"));
        Assert.Equal("feed", getSubscriptionOfMissingTopic.Xml.Name.LocalName);
        Assert.Equal(HttpStatusCode.NotFound, getSubscription.Status);
        Assert.StartsWith($"Entity 'sbemulatorns:Topic:{AdministrationScope.ConfiguredTopic}|nowhere' was not found.", getSubscription.Detail, StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.NotFound, getRule.Status);
        Assert.Equal((HttpStatusCode.NotFound, "application/xml;charset=utf-8"), (deleteQueue.Status, deleteQueue.ContentType));
        Assert.StartsWith("No service is hosted at the specified address. TrackingId:", deleteQueue.Detail, StringComparison.Ordinal);
        Assert.Contains("SystemTracker:sbemulatorns:nowhere, Timestamp:", deleteQueue.Detail, StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.NotFound, updateQueue.Status);
        Assert.StartsWith("SubCode=40400. Not Found. The Operation doesn't exist.", updateQueue.Detail, StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.Conflict, createExisting.Status);
        Assert.StartsWith("SubCode=40900. Conflict.", createExisting.Detail, StringComparison.Ordinal);
        Assert.Equal((HttpStatusCode.Created, "application/atom+xml;type=entry;charset=utf-8"), (created.Status, created.ContentType));
        Assert.Equal("fresh", created.Xml.Element("{http://www.w3.org/2005/Atom}title")!.Value);
        Assert.Equal((HttpStatusCode.OK, string.Empty), (deleted.Status, deleted.Body));
    }

    [Theory]
    [InlineData(null, "MissingToken: The authorization header was not found.")]
    [InlineData("SharedAccessSignature sr=x&sig=y", "MalformedToken:")]
    [InlineData("Bearer eyJhbGciOiJub25lIn0.e30.", "InvalidToken:")]
    [InlineData("wrong-key", "InvalidSignature:")]
    [InlineData("expired", "ExpiredToken:")]
    [InlineData("other-entity", "InvalidAudience:")]
    public async Task Requests_without_a_valid_signature_are_refused_with_401(string? token, string reason)
    {
        await using var scope = await AdministrationScope.StartAsync();
        using var http = new AdministrationHttp(scope.Emulator);
        var header = token switch
        {
            "wrong-key" => http.Token(key: "not the key"),
            "expired" => http.Token(validFor: TimeSpan.FromSeconds(-60)),
            "other-entity" => http.Token("https://127.0.0.1/somewhere-else"),
            _ => token,
        };

        var read = await http.GetAsync(EmulatorScope.Queue, header);
        var create = await http.PutAsync("not-made", AdministrationHttp.Queue(), token: header);
        var stillThere = await http.GetAsync("not-made");

        Assert.Equal(HttpStatusCode.Unauthorized, read.Status);
        Assert.StartsWith(reason, read.Detail, StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.Unauthorized, create.Status);
        Assert.Equal("feed", stillThere.Xml.Name.LocalName);
    }

    [Fact]
    public async Task The_sdk_with_a_wrong_key_gets_UnauthorizedAccessException_and_a_token_for_one_entity_reaches_that_entity_only()
    {
        await using var scope = await AdministrationScope.StartAsync();
        var wrongKey = AdministrationScope.CreateAdmin(scope.Emulator.AdministrationConnectionString!.Replace("SharedAccessKey=SAS_KEY_VALUE", "SharedAccessKey=guessed", StringComparison.Ordinal));
        using var http = new AdministrationHttp(scope.Emulator);
        var scoped = http.Token($"https://127.0.0.1/{EmulatorScope.Queue}");

        var refused = await Assert.ThrowsAsync<UnauthorizedAccessException>(() => wrongKey.GetQueueAsync(EmulatorScope.Queue));
        var own = await http.GetAsync(EmulatorScope.Queue, scoped);
        var other = await http.GetAsync(AdministrationScope.ConfiguredTopic, scoped);
        var list = await http.GetAsync("$Resources/queues", scoped);

        Assert.Contains("InvalidSignature", refused.Message, StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.OK, own.Status);
        Assert.Equal((HttpStatusCode.Unauthorized, HttpStatusCode.Unauthorized), (other.Status, list.Status));
    }

    [Fact]
    public async Task Refused_settings_are_400s_that_the_sdk_raises_as_ArgumentException_with_the_service_text()
    {
        await using var scope = await AdministrationScope.StartAsync();
        var admin = scope.Admin;
        await admin.CreateTopicAsync("t");

        var refusals = new (string Setting, Func<Task> Call)[]
        {
            ("The supplied lock time exceeds the allowed maximum of '5' minutes.", () => admin.CreateQueueAsync(new CreateQueueOptions("q1") { LockDuration = TimeSpan.FromMinutes(10) })),
            ("The property 'MaxSizeInMegabytes', must be one of the following values: 1024;2048;3072;4096;5120.", () => admin.CreateQueueAsync(new CreateQueueOptions("q2") { MaxSizeInMegabytes = 16384 })),
            ("'EnablePartitioning'", () => admin.CreateQueueAsync(new CreateQueueOptions("q3") { EnablePartitioning = true })),
            ("'ForwardTo'", () => admin.CreateQueueAsync(new CreateQueueOptions("q4") { ForwardTo = EmulatorScope.Queue })),
            ("'AutoDeleteOnIdle'", () => admin.CreateQueueAsync(new CreateQueueOptions("q5") { AutoDeleteOnIdle = TimeSpan.FromMinutes(10) })),
            ("'Status'", () => admin.CreateQueueAsync(new CreateQueueOptions("q6") { Status = EntityStatus.SendDisabled })),
            ("MaxDeliveryCount must be 1..2000", () => admin.CreateQueueAsync(new CreateQueueOptions("q7") { MaxDeliveryCount = 5000 })),
            ("is not supported at position 7", () => admin.CreateSubscriptionAsync(new CreateSubscriptionOptions("t", "s1"), new CreateRuleOptions("r", new SqlRuleFilter("weight + 1 > 10")))),
            ("Parameters are not supported", () => admin.CreateSubscriptionAsync(new CreateSubscriptionOptions("t", "s2"), new CreateRuleOptions("r", Parameterised()))),
        };

        foreach (var (setting, call) in refusals)
        {
            var refused = await Assert.ThrowsAsync<ArgumentException>(call);
            Assert.Contains("SubCode=40000.", refused.Message, StringComparison.Ordinal);
            Assert.Contains(setting, refused.Message, StringComparison.Ordinal);
        }

        // The SDK cannot ask for this one (RequiresSession is read-only on QueueProperties); other clients can.
        using var http = new AdministrationHttp(scope.Emulator);
        var sessionChange = await http.PutAsync(EmulatorScope.Queue, AdministrationHttp.Queue("<RequiresSession>true</RequiresSession>"), update: true);
        Assert.Equal(HttpStatusCode.BadRequest, sessionChange.Status);
        Assert.StartsWith("SubCode=40000. The value for the 'RequiresSession' property of an existing Queue cannot be changed.", sessionChange.Detail, StringComparison.Ordinal);

        var queues = await admin.GetQueuesAsync().Select(queue => queue.Name).ToListAsync();

        Assert.Equal([EmulatorScope.Queue], queues);
        Assert.False((await admin.GetQueueAsync(EmulatorScope.Queue)).Value.RequiresSession);
        Assert.False((await admin.SubscriptionExistsAsync("t", "s1")).Value);
    }

    [Fact]
    public async Task Malformed_dtd_oversized_and_mismatched_bodies_are_refused_and_unknown_elements_ignored()
    {
        await using var scope = await AdministrationScope.StartAsync();
        using var http = new AdministrationHttp(scope.Emulator);
        const string LaughingDtd = """<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><entry xmlns="http://www.w3.org/2005/Atom">&lol2;</entry>""";

        var malformed = await http.PutAsync("q-malformed", "<entry xmlns=\"http://www.w3.org/2005/Atom\"><content>");
        var dtd = await http.PutAsync("q-dtd", LaughingDtd);
        var oversized = await http.PutAsync("q-big", AdministrationHttp.Queue($"<UserMetadata>{new string('x', 300 * 1024)}</UserMetadata>"));
        var notAtom = await http.PutAsync("q-json", "{\"LockDuration\":\"PT1M\"}");
        var empty = await http.PutAsync("q-empty", string.Empty);
        var badValue = await http.PutAsync("q-value", AdministrationHttp.Queue("<LockDuration>a minute</LockDuration>"));
        var twice = await http.PutAsync("q-twice", AdministrationHttp.Queue("<MaxDeliveryCount>3</MaxDeliveryCount><MaxDeliveryCount>4</MaxDeliveryCount>"));
        var wrongKind = await http.PutAsync($"{AdministrationScope.ConfiguredTopic}/Subscriptions/s", AdministrationHttp.Queue());
        var badName = await http.PutAsync("bad*name", AdministrationHttp.Queue());
        var badPaging = await http.GetAsync("$Resources/queues?api-version=2021-05&$top=-1");
        var post = await http.SendAsync(HttpMethod.Post, "q-post", AdministrationHttp.Queue());
        var unknown = await http.PutAsync("q-unknown", AdministrationHttp.Queue("<MaxDeliveryCount>3</MaxDeliveryCount><ShinyNewSetting>on</ShinyNewSetting><Nested><Deeper/></Nested>"));
        var listed = await http.GetAsync("$Resources/queues");

        Assert.Equal(HttpStatusCode.BadRequest, malformed.Status);
        Assert.StartsWith("SubCode=40000. The request body is not well-formed XML", malformed.Detail, StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.BadRequest, dtd.Status);
        Assert.Contains("DTD", dtd.Detail, StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.RequestEntityTooLarge, oversized.Status);
        Assert.StartsWith("SubCode=41300.", oversized.Detail, StringComparison.Ordinal);
        Assert.Equal((HttpStatusCode.BadRequest, HttpStatusCode.BadRequest), (notAtom.Status, empty.Status));
        Assert.Contains("The value 'a minute' of 'LockDuration' is not valid", badValue.Detail, StringComparison.Ordinal);
        Assert.Contains("'MaxDeliveryCount' is given twice", twice.Detail, StringComparison.Ordinal);
        Assert.Contains("A QueueDescription cannot be put at", wrongKind.Detail, StringComparison.Ordinal);
        Assert.Contains("contains character(s) that is not allowed by Service Bus", badName.Detail, StringComparison.Ordinal);
        Assert.Equal((HttpStatusCode.BadRequest, HttpStatusCode.MethodNotAllowed), (badPaging.Status, post.Status));
        Assert.Equal(HttpStatusCode.Created, unknown.Status);
        Assert.DoesNotContain("ShinyNewSetting", unknown.Body, StringComparison.Ordinal);
        Assert.Equal("3", unknown.Xml.Descendants("{http://schemas.microsoft.com/netservices/2010/10/servicebus/connect}MaxDeliveryCount").Single().Value);
        var titles = listed.Xml.Elements("{http://www.w3.org/2005/Atom}entry").Select(e => e.Element("{http://www.w3.org/2005/Atom}title")!.Value);
        Assert.Equal([EmulatorScope.Queue, "q-unknown"], titles);
    }

    [Fact]
    public async Task A_request_with_api_version_is_the_administration_api_and_one_without_reaches_the_emulator_endpoints()
    {
        await using var scope = await AdministrationScope.StartAsync();
        using var http = new AdministrationHttp(scope.Emulator);
        using var plain = new HttpClient { BaseAddress = scope.Emulator.HttpEndpoint };

        var created = await http.PutAsync(EmulatorMetricNames.PrometheusPath, AdministrationHttp.Queue());
        var read = await http.GetAsync(EmulatorMetricNames.PrometheusPath);
        var scrape = await plain.GetStringAsync(EmulatorMetricNames.PrometheusPath);
        var health = await plain.GetAsync(EmulatorMetricNames.HealthPath);

        Assert.Equal(HttpStatusCode.Created, created.Status);
        Assert.Equal("metrics", read.Xml.Element("{http://www.w3.org/2005/Atom}title")!.Value);
        Assert.Contains("servicebus_emulator_incoming_messages_total{queue=\"metrics\"}", scrape, StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.OK, health.StatusCode);
    }

    [Fact]
    public async Task A_subscription_takes_rules_up_to_the_services_quota_and_the_next_is_a_403_the_sdk_reports_as_QuotaExceeded()
    {
        await using var scope = await AdministrationScope.StartAsync();
        using var http = new AdministrationHttp(scope.Emulator);
        const string Rules = $"{AdministrationScope.ConfiguredTopic}/Subscriptions/all/Rules";
        var rule = AdministrationHttp.Entry("""<RuleDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"/>""");

        // $Default is the first of the 2,000.
        for (var i = 1; i < 2_000; i++)
        {
            Assert.Equal(HttpStatusCode.Created, (await http.PutAsync($"{Rules}/r{i}", rule)).Status);
        }

        var over = await http.PutAsync($"{Rules}/one-too-many", rule);
        var throughSdk = await Assert.ThrowsAsync<Azure.Messaging.ServiceBus.ServiceBusException>(() =>
            scope.Admin.CreateRuleAsync(AdministrationScope.ConfiguredTopic, "all", new CreateRuleOptions("also-too-many")));
        var listed = await http.GetAsync($"{Rules}?api-version=2021-05&$skip=1990");

        Assert.Equal(HttpStatusCode.Forbidden, over.Status);
        Assert.StartsWith("SubCode=40300. The maximum number of rules (2000)", over.Detail, StringComparison.Ordinal);
        Assert.Equal(Azure.Messaging.ServiceBus.ServiceBusFailureReason.QuotaExceeded, throughSdk.Reason);
        Assert.Equal(10, listed.Xml.Elements("{http://www.w3.org/2005/Atom}entry").Count());
    }

    [Fact]
    public async Task A_path_holding_characters_xml_cannot_carry_is_refused_with_an_error_body_that_replaces_them()
    {
        await using var scope = await AdministrationScope.StartAsync();
        using var http = new AdministrationHttp(scope.Emulator);

        // U+FFFF, which Kestrel decodes into the path and XML has no place for; named in the detail, it once made the answer a 500.
        var answer = await http.GetAsync("bad%EF%BF%BFname");
        var version = await http.GetAsync($"{EmulatorScope.Queue}?api-version=%EF%BF%BF");

        Assert.Equal(HttpStatusCode.BadRequest, answer.Status);
        Assert.Contains("SystemTracker:sbemulatorns:bad\uFFFDname", answer.Detail, StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.BadRequest, version.Status);
        Assert.StartsWith("SubCode=40000. The api-version '\uFFFD' is not valid", version.Detail, StringComparison.Ordinal);
    }

    private static SqlRuleFilter Parameterised()
    {
        var filter = new SqlRuleFilter("weight > @limit");
        filter.Parameters["@limit"] = 10;
        return filter;
    }
}
