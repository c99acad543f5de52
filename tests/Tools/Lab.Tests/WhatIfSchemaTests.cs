using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// A what-if is checked against the chart's values.schema.json before anything starts, and each
/// violation names the value's path and the rule it breaks — the same paths and rules helm reports
/// (tests/Charts.Tests/SchemaTests has helm's side of these cases).
/// </summary>
public sealed class WhatIfSchemaTests
{
    private static readonly StepCatalog Catalog = StepCatalog.Load();

    public static TheoryData<string> StepIds => new(Catalog.Steps.Select(s => s.Id).Order(StringComparer.Ordinal));

    [Theory]
    [MemberData(nameof(StepIds))]
    public void Every_step_of_the_chart_meets_the_schema(string step)
    {
        Assert.Empty(Catalog.Schema.Validate(Catalog[step].Values));
    }

    [Theory]
    [InlineData("workflow.settings.Processor.MaxConcurrentCalls=0", "/workflow/settings/Processor/MaxConcurrentCalls", "minimum")]
    [InlineData("workflow.settings.Processor.PrefetchCount=-1", "/workflow/settings/Processor/PrefetchCount", "minimum")]
    [InlineData("droneScheduler.settings.Utilization.MaxConcurency=-1", "/droneScheduler/settings/Utilization", "additionalProperties")]
    [InlineData("droneScheduler.settings.Cosmos.ConnectionMode=Tcp", "/droneScheduler/settings/Cosmos/ConnectionMode", "enum")]
    [InlineData("gateway.settings.Backends.Delivery.Timeout=10s", "/gateway/settings/Backends/Delivery/Timeout", "pattern")]
    [InlineData("gateway.replicas=0", "/gateway/replicas", "minimum")]
    [InlineData("cosmosDb.containers.utilization.throughput=950", "/cosmosDb/containers/utilization/throughput", "multipleOf")]
    [InlineData("serviceBus.queues.deliveryrequests.lockDuration=PT10M", "/serviceBus/queues/deliveryrequests/lockDuration", "pattern")]
    [InlineData("redis.maxmemory=lots", "/redis/maxmemory", "pattern")]
    [InlineData("image.tag=latest", "/image/tag", "not")]
    [InlineData("commonSettings.Resilience.MaxRetryAttempts=11", "/commonSettings/Resilience/MaxRetryAttempts", "maximum")]
    [InlineData("delivery.settings.Redis.ConnectionString=redis:6379", "/delivery/settings/Redis", "additionalProperties")]
    public void A_value_the_schema_refuses_is_named_with_the_rule_it_breaks(string assignment, string location, string keyword)
    {
        var error = Assert.Throws<InvalidDataException>(() => Catalog.WhatIf("B4", new WhatIf([new(ValuesSourceKind.Set, assignment)])));

        Assert.Contains("values.schema.json", error.Message);
        Assert.True(error.Message.Contains($"at '{location}': {keyword}:", StringComparison.Ordinal), error.Message);
    }

    [Fact]
    public void A_refused_property_is_named()
    {
        var error = Assert.Throws<InvalidDataException>(() => Catalog.WhatIf("A3", new WhatIf([new(ValuesSourceKind.Set, "droneScheduler.settings.Utilization.MaxConcurency=-1")])));

        Assert.Contains("'MaxConcurency' not allowed", error.Message);
    }

    [Fact]
    public void A_fraction_given_with_set_is_text_as_in_helm_and_the_error_says_what_to_do()
    {
        var error = Assert.Throws<InvalidDataException>(() => Catalog.WhatIf("A1", new WhatIf([new(ValuesSourceKind.Set, "commonSettings.Telemetry.TraceSamplingRatio=0.5")])));

        Assert.Contains("at '/commonSettings/Telemetry/TraceSamplingRatio': type:", error.Message);
        Assert.Contains("put a number like 0.5 in a -f file", error.Message);
    }

    [Fact]
    public void A_what_if_starts_from_its_step_and_lists_what_it_changes()
    {
        var step = Catalog.WhatIf("B4", new WhatIf([new(ValuesSourceKind.Set, "workflow.settings.Processor.PrefetchCount=100")]));

        Assert.Equal("B4+what-if", step.Id);
        Assert.Equal("B4", step.BaseId);
        Assert.Equal("B4 + what-if", step.Label);
        Assert.Equal("100", step.Settings(ServiceKind.Workflow)["Processor__PrefetchCount"]);
        Assert.Equal("20", step.Settings(ServiceKind.Workflow)["Processor__MaxConcurrentCalls"]);
        var change = Assert.Single(step.WhatIfChanges);
        Assert.Equal(new ValuesChange("workflow.settings.Processor.PrefetchCount", "3000", "100"), change);
    }
}
