using System.Text.RegularExpressions;

namespace DroneDelivery.Emulators.ServiceBus.Administration;

internal enum TargetKind
{
    /// <summary><c>$namespaceinfo</c>.</summary>
    Namespace,

    /// <summary><c>$Resources/queues</c>.</summary>
    QueueList,

    /// <summary><c>$Resources/topics</c>.</summary>
    TopicList,

    /// <summary><c>{name}</c>: a queue or a topic (the body, or the entity found, tells which).</summary>
    Entity,

    /// <summary><c>{topic}/Subscriptions</c>.</summary>
    SubscriptionList,

    /// <summary><c>{topic}/Subscriptions/{subscription}</c>.</summary>
    Subscription,

    /// <summary><c>{topic}/Subscriptions/{subscription}/Rules</c>.</summary>
    RuleList,

    /// <summary><c>{topic}/Subscriptions/{subscription}/Rules/{rule}</c>.</summary>
    Rule,
}

/// <summary>
/// What an administration request addresses, read from its path as the SDKs build it: queue and topic names may hold
/// '/' (between segments of letters, digits, '.', '-' and '_', at most 260 characters); subscription and rule names may
/// not (at most 50; a rule's may start with '$', as <c>$Default</c> does).
/// </summary>
internal sealed partial record AdministrationTarget(TargetKind Kind, string Path, string Name = "", string Topic = "", string Subscription = "")
{
    private const int MaxEntityNameLength = 260;
    private const int MaxChildNameLength = 50;

    /// <summary>The service's name for the entity in its messages: <c>ns:Topic:topic|subscription|rule</c>.</summary>
    public string Tracker(string ns) => Kind switch
    {
        TargetKind.Subscription or TargetKind.RuleList => $"{ns}:Topic:{Topic}|{Subscription}",
        TargetKind.Rule => $"{ns}:Topic:{Topic}|{Subscription}|{Name}",
        TargetKind.SubscriptionList => $"{ns}:Topic:{Topic}",
        _ => $"{ns}:{Path}",
    };

    /// <summary>Reads a request path (already unescaped); <paramref name="url"/> is named in the refusal of a bad name.</summary>
    /// <exception cref="AdministrationException">400: a name the service would not accept.</exception>
    public static AdministrationTarget Parse(string path, string url)
    {
        path = path.Trim('/');
        var segments = path.Split('/');
        if (segments.Length == 1 && string.Equals(path, "$namespaceinfo", StringComparison.OrdinalIgnoreCase))
        {
            return new AdministrationTarget(TargetKind.Namespace, path);
        }

        if (segments.Length == 2 && string.Equals(segments[0], "$Resources", StringComparison.OrdinalIgnoreCase))
        {
            return segments[1].ToLowerInvariant() switch
            {
                "queues" => new AdministrationTarget(TargetKind.QueueList, path),
                "topics" => new AdministrationTarget(TargetKind.TopicList, path),
                _ => throw AdministrationException.InvalidName(url),
            };
        }

        var at = Array.FindIndex(segments, 1, s => string.Equals(s, "Subscriptions", StringComparison.OrdinalIgnoreCase));
        if (at < 0)
        {
            return new AdministrationTarget(TargetKind.Entity, path, Name: EntityName(path, url));
        }

        var topic = EntityName(string.Join('/', segments[..at]), url);
        var rest = segments[(at + 1)..];
        if (rest.Length == 0)
        {
            return new AdministrationTarget(TargetKind.SubscriptionList, path, Topic: topic);
        }

        var subscription = ChildName(rest[0], url, allowDollar: false);
        return rest.Length switch
        {
            1 => new AdministrationTarget(TargetKind.Subscription, path, subscription, topic, subscription),
            2 when IsRules(rest[1]) => new AdministrationTarget(TargetKind.RuleList, path, Topic: topic, Subscription: subscription),
            3 when IsRules(rest[1]) => new AdministrationTarget(TargetKind.Rule, path, ChildName(rest[2], url, allowDollar: true), topic, subscription),
            _ => throw AdministrationException.InvalidName(url),
        };
    }

    private static bool IsRules(string segment) => string.Equals(segment, "Rules", StringComparison.OrdinalIgnoreCase);

    private static string EntityName(string name, string url) =>
        name.Length is > 0 and <= MaxEntityNameLength && name.Split('/').All(s => Segment().IsMatch(s)) ? name : throw AdministrationException.InvalidName(url);

    private static string ChildName(string name, string url, bool allowDollar)
    {
        var body = allowDollar && name.StartsWith('$') ? name[1..] : name;
        return name.Length <= MaxChildNameLength && Segment().IsMatch(body) ? name : throw AdministrationException.InvalidName(url);
    }

    [GeneratedRegex(@"^[A-Za-z0-9._\-]+$")]
    private static partial Regex Segment();
}
