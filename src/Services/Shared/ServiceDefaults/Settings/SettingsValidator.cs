using System.Collections;
using System.ComponentModel.DataAnnotations;
using System.Reflection;
using Microsoft.Extensions.Options;

namespace DroneDelivery.ServiceDefaults.Settings;

/// <summary>
/// Validates a settings object with its data annotations (and <see cref="IValidatableObject"/>),
/// recursing into nested settings classes and collections, and reports each failure with the full
/// configuration key, e.g. <c>Workflow:Processor:MaxConcurrentCalls</c>.
/// </summary>
internal sealed class SettingsValidator<T>(string sectionPath) : IValidateOptions<T>
    where T : class
{
    public ValidateOptionsResult Validate(string? name, T options)
    {
        var failures = new List<string>();
        ValidateObject(options, sectionPath, failures, new HashSet<object>(ReferenceEqualityComparer.Instance));
        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }

    private static void ValidateObject(object instance, string path, List<string> failures, HashSet<object> visited)
    {
        if (!visited.Add(instance))
        {
            return;
        }

        var results = new List<ValidationResult>();
        Validator.TryValidateObject(instance, new ValidationContext(instance), results, validateAllProperties: true);
        foreach (var result in results)
        {
            var members = result.MemberNames.Any() ? result.MemberNames : [string.Empty];
            foreach (var member in members)
            {
                var key = member.Length == 0 ? path : $"{path}:{member}";
                var property = member.Length == 0 ? null : instance.GetType().GetProperty(member);
                var shown = property is null ? string.Empty : Describe(SettingValues.Display(property, property.GetValue(instance)));
                failures.Add($"Setting '{key}'{shown} is invalid: {result.ErrorMessage}");
            }
        }

        foreach (var property in instance.GetType().GetProperties(BindingFlags.Public | BindingFlags.Instance))
        {
            if (property.GetIndexParameters().Length > 0 || !IsSettingsType(property.PropertyType))
            {
                continue;
            }

            var value = property.GetValue(instance);
            switch (value)
            {
                case null:
                    break;
                case IDictionary dictionary:
                    foreach (DictionaryEntry entry in dictionary)
                    {
                        if (entry.Value is not null && IsSettingsType(entry.Value.GetType()))
                        {
                            ValidateObject(entry.Value, $"{path}:{property.Name}:{entry.Key}", failures, visited);
                        }
                    }

                    break;
                case IEnumerable sequence:
                    var index = 0;
                    foreach (var item in sequence)
                    {
                        if (item is not null && IsSettingsType(item.GetType()))
                        {
                            ValidateObject(item, $"{path}:{property.Name}:{index}", failures, visited);
                        }

                        index++;
                    }

                    break;
                default:
                    ValidateObject(value, $"{path}:{property.Name}", failures, visited);
                    break;
            }
        }
    }

    /// <summary>Classes of our own (and collections of them) hold nested settings; framework types do not.</summary>
    internal static bool IsSettingsType(Type type)
    {
        if (type == typeof(string) || type.IsPrimitive || type.IsEnum || type.IsValueType)
        {
            return false;
        }

        if (type.IsGenericType && typeof(IEnumerable).IsAssignableFrom(type))
        {
            return type.GetGenericArguments().Any(IsSettingsType);
        }

        return type.Namespace?.StartsWith("DroneDelivery", StringComparison.Ordinal) == true;
    }

    private static string Describe(string? shown) => shown is null ? string.Empty : $" = '{shown}'";
}
