using DroneDelivery.Charts.Tests.Infrastructure;

namespace DroneDelivery.Charts.Tests;

/// <summary>values.schema.json and the chart's own checks refuse bad values at install, naming them.</summary>
public sealed class SchemaTests
{
    [Theory]
    [InlineData("workflow.settings.Processor.MaxConcurrentCalls=0", "/workflow/settings/Processor/MaxConcurrentCalls", "minimum")]
    [InlineData("workflow.settings.Processor.PrefetchCount=-1", "/workflow/settings/Processor/PrefetchCount", "minimum")]
    [InlineData("droneScheduler.settings.Utilization.MaxConcurrency=-2", "/droneScheduler/settings/Utilization/MaxConcurrency", "minimum")]
    [InlineData("droneScheduler.settings.Utilization.MaxConcurency=-1", "/droneScheduler/settings/Utilization", "'MaxConcurency' not allowed")]
    [InlineData("droneScheduler.settings.Cosmos.ConnectionMode=Tcp", "/droneScheduler/settings/Cosmos/ConnectionMode", "value must be one of")]
    [InlineData("gateway.settings.Backends.Delivery.Timeout=10s", "/gateway/settings/Backends/Delivery/Timeout", "does not match pattern")]
    [InlineData("gateway.replicas=0", "/gateway/replicas", "minimum")]
    [InlineData("cosmosDb.containers.utilization.throughput=950", "/cosmosDb/containers/utilization/throughput", "multipleOf")]
    [InlineData("cosmosDb.containers.utilization.physicalPartitions=0", "/cosmosDb/containers/utilization/physicalPartitions", "minimum")]
    [InlineData("serviceBus.queues.deliveryrequests.lockDuration=PT10M", "/serviceBus/queues/deliveryrequests/lockDuration", "does not match pattern")]
    [InlineData("serviceBus.queues.deliveryrequests.maxDeliveryCount=0", "/serviceBus/queues/deliveryrequests/maxDeliveryCount", "minimum")]
    [InlineData("redis.maxmemory=lots", "/redis/maxmemory", "does not match pattern")]
    [InlineData("redis.maxmemoryPolicy=lru", "/redis/maxmemoryPolicy", "value must be one of")]
    [InlineData("image.tag=latest", "/image/tag", "failed")]
    [InlineData("commonSettings.Resilience.MaxRetryAttempts=11", "/commonSettings/Resilience/MaxRetryAttempts", "maximum")]
    public void Schema_rejects_a_bad_value_naming_it(string assignment, string where, string why)
    {
        var error = Chart.TemplateError("--set", assignment);

        Assert.Contains("values don't meet the specifications of the schema", error);
        Assert.Contains($"at '{where}'", error);
        Assert.Contains(why, error);
    }

    [Theory]
    [InlineData("delivery.settings.Redis.ConnectionString=redis:6379")]
    [InlineData("droneScheduler.settings.Cosmos.ConnectionString=AccountEndpoint=x")]
    [InlineData("workflow.settings.ServiceBus.ConnectionString=Endpoint=x")]
    [InlineData("gateway.settings.Backends.Delivery.BaseAddress=http://elsewhere")]
    public void Schema_rejects_connections_in_settings_which_the_chart_wires(string assignment)
    {
        var error = Chart.TemplateError("--set", assignment);

        Assert.Contains("not allowed", error);
    }

    [Theory]
    [InlineData("droneScheduler.settings.Utilization.ContainerId=missing", "Utilization.ContainerId 'missing' is not declared in cosmosDb.containers")]
    [InlineData("droneScheduler.settings.Utilization.PartitionKeyPath=/ownerId", "a container's partition key cannot change")]
    [InlineData("droneScheduler.settings.Utilization.QueryWithPartitionKey=true", "QueryWithPartitionKey needs Utilization.PartitionKeyPath /ownerId")]
    [InlineData("package.settings.Packages.ContainerId=parcels", "package.settings.Packages.ContainerId 'parcels' is not declared")]
    [InlineData("workflow.settings.ServiceBus.QueueName=other", "must name the same queue")]
    [InlineData("serviceDefaults.autoscaling.minReplicas=20", "autoscaling.minReplicas (20) exceeds autoscaling.maxReplicas (12)")]
    public void Chart_rejects_values_that_contradict_each_other(string assignment, string message)
    {
        var error = Chart.TemplateError("--set", assignment);

        Assert.Contains(message, error);
    }

    [Fact]
    public void Without_emulators_every_connection_needs_a_source()
    {
        var error = Chart.TemplateError("--set", "emulators.enabled=false");

        Assert.Contains("needs Cosmos DB: set emulators.enabled=true, azure.cosmosDb.accountEndpoint, or secrets.existingSecret", error);
    }

    [Fact]
    public void Key_Vault_requires_workload_identity()
    {
        var error = Chart.TemplateError(
            "--set", "redis.enabled=false", "--set", "azure.keyVault.enabled=true", "--set", "azure.keyVault.name=kv",
            "--set", "azure.tenantId=t");

        Assert.Contains("azure.keyVault.enabled needs azure.workloadIdentity.enabled", error);
    }
}
