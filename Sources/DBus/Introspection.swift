import Synchronization

/// Introspection XML (`org.freedesktop.DBus.Introspectable`) of exported objects and of the
/// intermediate nodes above them (dbus-fast's `introspection.py`).
extension DBusExportedObject {
    func introspectionXML(children: [String], isManager: Bool) -> String {
        var x = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>

        """
        x += Introspection.standard(properties: true, objectManager: isManager)
        let list = interfaces.withLock { $0.map(\.1.description) }
        for i in list { x += Introspection.interface(i) }
        for c in children { x += "  <node name=\"\(Introspection.escape(c))\"/>\n" }
        x += "</node>\n"
        return x
    }
}

enum Introspection {
    /// A node with no exported object of its own: the standard interfaces and its children.
    static func intermediateNode(children: [String], isManager: Bool) -> String {
        var x = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>

        """
        x += standard(properties: false, objectManager: isManager)
        for c in children { x += "  <node name=\"\(escape(c))\"/>\n" }
        return x + "</node>\n"
    }

    static func escape(_ s: String) -> String {
        var o = ""
        for ch in s {
            switch ch {
            case "&": o += "&amp;"
            case "<": o += "&lt;"
            case ">": o += "&gt;"
            case "\"": o += "&quot;"
            case "'": o += "&apos;"
            default: o.append(ch)
            }
        }
        return o
    }

    static func arg(_ a: DBusArgument, direction: String?) -> String {
        var s = "      <arg name=\"\(escape(a.name))\" type=\"\(escape(a.signature.rawValue))\""
        if let d = direction { s += " direction=\"\(d)\"" }
        return s + "/>\n"
    }

    static func interface(_ i: DBusInterface) -> String {
        var x = "  <interface name=\"\(escape(i.name))\">\n"
        for m in i.methods {
            x += "    <method name=\"\(escape(m.name))\">\n"
            for a in m.inArguments ?? [] { x += arg(a, direction: "in") }
            for a in m.outArguments ?? [] { x += arg(a, direction: "out") }
            x += "    </method>\n"
        }
        for s in i.signals {
            x += "    <signal name=\"\(escape(s.name))\">\n"
            for a in s.arguments { x += arg(a, direction: nil) }
            x += "    </signal>\n"
        }
        for p in i.properties {
            x += "    <property name=\"\(escape(p.name))\" type=\"\(escape(p.signature.rawValue))\" access=\"\(p.access.rawValue)\""
            if p.emitsChanged != .true {
                x += ">\n      <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"\(p.emitsChanged.rawValue)\"/>\n    </property>\n"
            } else {
                x += "/>\n"
            }
        }
        return x + "  </interface>\n"
    }

    static func standard(properties: Bool, objectManager: Bool) -> String {
        var x = """
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect">
              <arg name="xml_data" type="s" direction="out"/>
            </method>
          </interface>
          <interface name="org.freedesktop.DBus.Peer">
            <method name="Ping"/>
            <method name="GetMachineId">
              <arg name="machine_uuid" type="s" direction="out"/>
            </method>
          </interface>

        """
        if properties {
            x += """
              <interface name="org.freedesktop.DBus.Properties">
                <method name="Get">
                  <arg name="interface_name" type="s" direction="in"/>
                  <arg name="property_name" type="s" direction="in"/>
                  <arg name="value" type="v" direction="out"/>
                </method>
                <method name="GetAll">
                  <arg name="interface_name" type="s" direction="in"/>
                  <arg name="props" type="a{sv}" direction="out"/>
                </method>
                <method name="Set">
                  <arg name="interface_name" type="s" direction="in"/>
                  <arg name="property_name" type="s" direction="in"/>
                  <arg name="value" type="v" direction="in"/>
                </method>
                <signal name="PropertiesChanged">
                  <arg name="interface_name" type="s"/>
                  <arg name="changed_properties" type="a{sv}"/>
                  <arg name="invalidated_properties" type="as"/>
                </signal>
              </interface>

            """
        }
        if objectManager {
            x += """
              <interface name="org.freedesktop.DBus.ObjectManager">
                <method name="GetManagedObjects">
                  <arg name="objects" type="a{oa{sa{sv}}}" direction="out"/>
                </method>
                <signal name="InterfacesAdded">
                  <arg name="object" type="o"/>
                  <arg name="interfaces" type="a{sa{sv}}"/>
                </signal>
                <signal name="InterfacesRemoved">
                  <arg name="object" type="o"/>
                  <arg name="interfaces" type="as"/>
                </signal>
              </interface>

            """
        }
        return x
    }
}

