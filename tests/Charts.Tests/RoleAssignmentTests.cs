using System.Reflection;
using System.Text.Json;
using System.Text.RegularExpressions;
using DroneDelivery.Charts.Tests.Infrastructure;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// Each service's managed identity holds the Azure roles the SDK calls of its own code need, and no
/// more, as infra/ assigns them. What a service needs is read from its compiled code (<see cref="SdkCalls"/>):
/// a new call that needs a right the Bicep does not give fails here, not on Azure under load.
/// </summary>
public sealed partial class RoleAssignmentTests
{
    /// <summary>The service assemblies, by the name infra/modules/identities.bicep gives each service's identity.</summary>
    private static readonly Dictionary<string, Assembly> Services = new(StringComparer.Ordinal)
    {
        ["gateway"] = typeof(Gateway.GatewayProgram).Assembly,
        ["ingestion"] = typeof(Ingestion.IngestionProgram).Assembly,
        ["workflow"] = typeof(Workflow.WorkflowProgram).Assembly,
        ["delivery"] = typeof(Delivery.DeliveryProgram).Assembly,
        ["package"] = typeof(Package.PackageProgram).Assembly,
        ["dronescheduler"] = typeof(DroneScheduler.DroneSchedulerProgram).Assembly,
    };

    public static TheoryData<string> ServiceNames => new(Services.Keys);

    [Fact]
    public void Every_service_identity_of_the_infrastructure_is_one_of_these_services()
    {
        var identities = Bicep.Compile("modules/identities.bicep").GetProperty("parameters").GetProperty("services")
            .GetProperty("defaultValue").EnumerateArray().Select(s => s.GetString()!);

        Assert.Equal(Services.Keys.Order(StringComparer.Ordinal), identities.Order(StringComparer.Ordinal));
    }

    [Theory]
    [MemberData(nameof(ServiceNames))]
    public void A_service_holds_the_Service_Bus_rights_its_calls_need_and_no_more(string service)
    {
        var needed = ServiceBusRights.Needed(SdkCalls.Of(Services[service], ServiceBusRights.Namespace));
        var held = ServiceBusRolesByService().GetValueOrDefault(service, [])
            .SelectMany(role => ServiceBusRights.OfRole[role])
            .ToHashSet();

        foreach (var (right, calls) in needed)
        {
            Assert.True(held.Contains(right),
                $"{service} calls {string.Join(", ", calls.Order(StringComparer.Ordinal))}, which need the Service Bus right {right}, " +
                $"but infra/modules/servicebus.bicep gives its identity only {Describe(held)}.");
        }

        var unused = held.Except(needed.Keys).ToList();
        Assert.True(unused.Count == 0, $"{service}'s identity holds {Describe(unused)} on the queue, which none of its calls needs.");
    }

    [Fact]
    public void The_shared_libraries_make_no_Service_Bus_call_that_needs_a_right()
    {
        // A right is checked per service above; a call in a library every service references could not be attributed.
        foreach (var library in SharedLibraries())
        {
            var needed = ServiceBusRights.Needed(SdkCalls.Of(library, ServiceBusRights.Namespace));
            Assert.True(needed.Count == 0,
                $"{library.GetName().Name} calls {string.Join(", ", needed.SelectMany(n => n.Value))}: move the call into the service that makes it, so its identity's roles can be checked.");
        }
    }

    [Fact]
    public void The_Workflow_schedules_its_retries_so_it_needs_Send()
    {
        // The call that made Data Receiver alone wrong: a transient failure schedules a copy of the message.
        var calls = SdkCalls.Of(Services["workflow"], ServiceBusRights.Namespace);

        Assert.Contains(calls, c => c.ToString() == "ServiceBusSender.ScheduleMessageAsync");
        Assert.Contains(ServiceBusRights.Right.Send, ServiceBusRights.Needed(calls).Keys);
    }

    [Theory]
    [MemberData(nameof(ServiceNames))]
    public void A_service_that_calls_Cosmos_DB_has_the_data_role_on_every_container_the_chart_gives_it_and_only_those(string service)
    {
        var calls = SdkCalls.Of(Services[service], "Microsoft.Azure.Cosmos");
        var granted = CosmosContainersByService().GetValueOrDefault(service, []);
        var used = ChartContainers(service);

        Assert.Equal(used.Count > 0, calls.Count > 0);
        Assert.True(used.SetEquals(granted),
            $"{service} uses the containers {string.Join(", ", used.Order(StringComparer.Ordinal))} (chart, every step) but infra/modules/cosmos.bicep grants " +
            $"its identity {(granted.Count == 0 ? "none" : string.Join(", ", granted.Order(StringComparer.Ordinal)))}.");
    }

    [Theory]
    [MemberData(nameof(ServiceNames))]
    public void A_service_makes_no_Cosmos_DB_call_a_data_plane_role_cannot_make(string service)
    {
        // Entra ID data-plane roles cannot create databases or containers or change throughput. Only the
        // seed command (run by a person with --load-only on Azure, never by the service's identity) may.
        var forbidden = SdkCalls.Of(Services[service], "Microsoft.Azure.Cosmos")
            .Where(c => c.CallerNamespace != "DroneDelivery.DroneScheduler.Seeding" && ControlPlane().IsMatch(c.Member))
            .Select(c => $"{c} (in {c.CallerNamespace})")
            .ToList();

        Assert.True(forbidden.Count == 0, $"{service} calls {string.Join(", ", forbidden)}, which its Entra ID data-plane role cannot do.");
    }

    /// <summary>Service Bus roles per service, read from the compiled module and the principal ids main.bicep gives it.</summary>
    private static Dictionary<string, List<string>> ServiceBusRolesByService()
    {
        var module = Bicep.Compile("modules/servicebus.bicep");
        var roles = module.GetProperty("variables").GetProperty("roles");
        var assignments = Bicep.Resources(module).Where(r => r.GetProperty("type").GetString() == "Microsoft.Authorization/roleAssignments").ToList();

        // The one loop that gives service identities their roles, in the form the reading below assumes.
        var loop = assignments.Single(a => a.GetProperty("properties").GetProperty("principalId").GetString()!.Contains("principalIds", StringComparison.Ordinal));
        Assert.Equal("[length(variables('serviceRoles'))]", loop.GetProperty("copy").GetProperty("count").GetString());
        Assert.Equal("[parameters('principalIds')[variables('serviceRoles')[copyIndex()].service]]", loop.GetProperty("properties").GetProperty("principalId").GetString());
        Assert.Equal("[subscriptionResourceId('Microsoft.Authorization/roleDefinitions', variables('roles')[variables('serviceRoles')[copyIndex()].role])]",
            loop.GetProperty("properties").GetProperty("roleDefinitionId").GetString());
        Assert.Equal(PrincipalIdsByService(), ModuleParameter("servicebus", "principalIds"));

        return module.GetProperty("variables").GetProperty("serviceRoles").EnumerateArray()
            .GroupBy(a => a.GetProperty("service").GetString()!, StringComparer.Ordinal)
            .ToDictionary(g => g.Key, g => g.Select(a => roles.GetProperty(a.GetProperty("role").GetString()!).GetString()!).ToList(), StringComparer.Ordinal);
    }

    /// <summary>Containers on which each service's identity has Cosmos DB Built-in Data Contributor.</summary>
    private static Dictionary<string, HashSet<string>> CosmosContainersByService()
    {
        var parameters = Bicep.Compile("modules/cosmos.bicep").GetProperty("parameters");
        var byService = new Dictionary<string, HashSet<string>>(StringComparer.Ordinal);
        foreach (var (principal, containers) in new[] { ("packagePrincipalId", "packageContainers"), ("droneSchedulerPrincipalId", "droneSchedulerContainers") })
        {
            // main.bicep passes principalIds.<service>: the same map by service name as every other module.
            var value = ModuleParameter("cosmos", principal);
            var match = PrincipalOfService().Match(value);
            Assert.True(match.Success && value.StartsWith(PrincipalIdsByService()[..^1], StringComparison.Ordinal), $"cosmos.{principal} is {value}");
            byService[match.Groups[1].Value] = parameters.GetProperty(containers).GetProperty("defaultValue").EnumerateArray().Select(c => c.GetString()!).ToHashSet(StringComparer.Ordinal);
        }

        return byService;
    }

    /// <summary>The Cosmos DB containers the chart's settings point a service at, in the defaults and every step.</summary>
    private static HashSet<string> ChartContainers(string service)
    {
        var paths = service switch
        {
            "package" => new[] { new[] { "package", "settings", "Packages", "ContainerId" } },
            "dronescheduler" => [["droneScheduler", "settings", "Drones", "ContainerId"], ["droneScheduler", "settings", "Utilization", "ContainerId"]],
            _ => [],
        };
        var defaults = Yaml.Parse(File.ReadAllText(Chart.ValuesFile));
        return Chart.StepNames
            .Select(step => Yaml.Merge(defaults, Yaml.Parse(File.ReadAllText(Chart.StepFile(step))) ?? new Dictionary<object, object?>()))
            .Prepend(defaults)
            .SelectMany(values => paths.Select(path => values.Text(path)!))
            .ToHashSet(StringComparer.Ordinal);
    }

    private static string PrincipalIdsByService()
    {
        var value = ModuleParameter("keyvault", "principalIds");
        Assert.Contains("lambda('id', lambdaVariables('id').service), lambda('id', lambdaVariables('id').principalId)", value, StringComparison.Ordinal);
        return value;
    }

    private static string ModuleParameter(string module, string parameter) =>
        Bicep.Resources(Bicep.Compile("main.bicep"))
            .Single(r => r.GetProperty("type").GetString() == "Microsoft.Resources/deployments" && r.GetProperty("name").GetString() == module)
            .GetProperty("properties").GetProperty("parameters").GetProperty(parameter).GetProperty("value").GetString()!;

    private static IEnumerable<Assembly> SharedLibraries() =>
        Services.Values
            .SelectMany(a => a.GetReferencedAssemblies())
            .Where(n => n.Name!.StartsWith("DroneDelivery.", StringComparison.Ordinal))
            .Select(n => n.Name!)
            .Distinct(StringComparer.Ordinal)
            .Select(name => Assembly.Load(name));

    private static string Describe(IEnumerable<ServiceBusRights.Right> rights) =>
        rights.Any() ? string.Join(", ", rights.Order()) : "no right";

    [GeneratedRegex(@"\)\.(\w+)\]$")]
    private static partial Regex PrincipalOfService();

    [GeneratedRegex(@"^(CreateDatabase|CreateContainer|DeleteContainer|DeleteAsync$|ReplaceContainer|ReplaceThroughput|ReadThroughput|DefineContainer)")]
    private static partial Regex ControlPlane();
}

/// <summary>
/// The Service Bus rights (Send, Listen, Manage) each SDK call needs, and the built-in roles that grant
/// them. Every call a service makes must be listed here, so an unclassified one fails the test instead
/// of passing as free.
/// </summary>
public static class ServiceBusRights
{
    public const string Namespace = "Azure.Messaging.ServiceBus";

    public enum Right
    {
        Send,
        Listen,
        Manage,
    }

    /// <summary>The Azure built-in roles by role definition id (docs: "Azure built-in roles", Integration).</summary>
    public static IReadOnlyDictionary<string, Right[]> OfRole { get; } = new Dictionary<string, Right[]>(StringComparer.Ordinal)
    {
        ["69a216fc-b8fb-44d8-bc22-1f3c2cd27a39"] = [Right.Send],                              // Azure Service Bus Data Sender
        ["4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0"] = [Right.Listen],                            // Azure Service Bus Data Receiver
        ["090c5cfd-751d-490a-894a-3ce6f1109419"] = [Right.Send, Right.Listen, Right.Manage], // Azure Service Bus Data Owner
    };

    /// <summary>Types whose members need no right: messages, options, errors, and the client's connection itself.</summary>
    private static readonly HashSet<string> Free = new(StringComparer.Ordinal)
    {
        "ServiceBusMessage", "ServiceBusReceivedMessage", "ServiceBusMessageBatch", "ServiceBusClientOptions",
        "ServiceBusProcessorOptions", "ServiceBusReceiverOptions", "ServiceBusSenderOptions", "ServiceBusRetryOptions",
        "ServiceBusRetryMode", "ServiceBusException", "ServiceBusFailureReason", "ProcessErrorEventArgs",
        "ServiceBusErrorSource", "SubQueue", "CreateMessageBatchOptions", "ServiceBusTransportType", "ServiceBusConnectionStringProperties",
    };

    /// <summary>The rights <paramref name="calls"/> need, each with the calls that need it.</summary>
    public static Dictionary<Right, List<string>> Needed(IEnumerable<SdkCall> calls)
    {
        var needed = new Dictionary<Right, List<string>>();
        foreach (var call in calls)
        {
            if (RightOf(call) is { } right)
            {
                (needed.TryGetValue(right, out var list) ? list : needed[right] = []).Add(call.ToString());
            }
        }

        return needed;
    }

    private static Right? RightOf(SdkCall call) => (call.Type, call.Member) switch
    {
        _ when call.Namespace == Namespace + ".Administration" => Right.Manage,
        (var type, _) when Free.Contains(type) => null,
        ("ServiceBusClient", ".ctor" or "DisposeAsync" or "get_FullyQualifiedNamespace" or "get_Identifier" or "get_IsClosed") => null,
        ("ServiceBusClient", "CreateSender") => Right.Send,
        ("ServiceBusClient", "CreateProcessor" or "CreateReceiver" or "CreateSessionProcessor" or "AcceptNextSessionAsync" or "AcceptSessionAsync") => Right.Listen,
        ("ServiceBusClient", "CreateRuleManager") => Right.Manage,
        ("ServiceBusSender", "SendMessageAsync" or "SendMessagesAsync" or "ScheduleMessageAsync" or "ScheduleMessagesAsync"
            or "CancelScheduledMessageAsync" or "CancelScheduledMessagesAsync" or "CreateMessageBatchAsync") => Right.Send,
        ("ServiceBusSender", "get_EntityPath" or "get_FullyQualifiedNamespace" or "get_Identifier" or "get_IsClosed" or "CloseAsync" or "DisposeAsync") => null,
        ("ServiceBusProcessor" or "ServiceBusReceiver" or "ServiceBusSessionProcessor" or "ServiceBusSessionReceiver", _) => Right.Listen,
        ("ProcessMessageEventArgs", "CompleteMessageAsync" or "AbandonMessageAsync" or "DeadLetterMessageAsync" or "DeferMessageAsync" or "RenewMessageLockAsync") => Right.Listen,
        ("ProcessMessageEventArgs", "get_Message" or "get_CancellationToken" or "get_EntityPath" or "get_FullyQualifiedNamespace" or "get_Identifier"
            or "add_MessageLockLostAsync" or "remove_MessageLockLostAsync") => null,
        _ => throw new InvalidOperationException(
            $"The Service Bus call {call} (from {call.CallerNamespace}) is not classified: add it to {nameof(ServiceBusRights)} with the right it needs (Send, Listen, Manage or none)."),
    };
}
