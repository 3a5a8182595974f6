//! The body of an event write: the core/v1 Event client-go's recorder writes for Volcano,
//! serialized from borrowed fields.
//!
//! Two events go out per pod placed (the pod's and its PodGroup's `Scheduled`). Building the
//! typed `Event` copied every name, reason and message into owned strings, and its two
//! timestamps were formatted through a general `strftime` each time; here the fields are
//! borrowed from the session's event and the timestamp text is made once per second
//! ([`SecondText`]). The JSON is the same object (a test compares it with the typed one).

use std::sync::Mutex;

use engine::framework::{Event as SchedEvent, ObjectRef};
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

/// The wire form of the event; field names as the API server reads them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventBody<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: Meta<'a>,
    involved_object: Involved<'a>,
    #[serde(rename = "type")]
    type_: &'a str,
    reason: &'a str,
    message: &'a str,
    action: &'static str,
    source: Source<'a>,
    count: i32,
    first_timestamp: &'a str,
    last_timestamp: &'a str,
    reporting_component: &'a str,
    reporting_instance: &'a str,
}

#[derive(Serialize)]
struct Meta<'a> {
    name: &'a str,
    namespace: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Involved<'a> {
    api_version: &'static str,
    kind: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    #[serde(skip_serializing_if = "str::is_empty")]
    uid: &'a str,
}

#[derive(Serialize)]
struct Source<'a> {
    component: &'a str,
}

/// The API version an involved object is read under.
pub(super) fn api_version_of(o: &ObjectRef) -> &'static str {
    match o.kind {
        "PodGroup" | "Queue" => apis::API_VERSION,
        _ => "v1",
    }
}

/// What differs between the event writes of one executor: who reports, and when.
pub(super) struct Reporter<'a> {
    pub component: &'a str,
    pub instance: &'a str,
}

/// The event's JSON body, written in `namespace` (the object's, or `default` for a cluster-scoped
/// one) and named `<object>.<nanoseconds in hex>`, as client-go names them.
pub(super) fn event_body(
    ev: &SchedEvent,
    namespace: &str,
    reporter: &Reporter<'_>,
    now: Timestamp,
    time_text: &str,
) -> serde_json::Result<Vec<u8>> {
    let name = format!("{}.{:x}", ev.object.name, now.as_nanosecond());
    let message = super::truncate(&ev.message, 1000);
    let body = EventBody {
        api_version: "v1",
        kind: "Event",
        metadata: Meta {
            name: &name,
            namespace,
        },
        involved_object: Involved {
            api_version: api_version_of(&ev.object),
            kind: ev.object.kind,
            name: &ev.object.name,
            namespace: ev.object.namespace.as_deref(),
            uid: &ev.object.uid,
        },
        type_: ev.type_.as_str(),
        reason: &ev.reason,
        message: &message,
        action: "Scheduling",
        source: Source {
            component: reporter.component,
        },
        count: 1,
        first_timestamp: time_text,
        last_timestamp: time_text,
        reporting_component: reporter.component,
        reporting_instance: reporter.instance,
    };
    serde_json::to_vec(&body)
}

/// A timestamp's text as a `metav1.Time` is written (whole seconds, UTC), made once per
/// second.
#[derive(Default)]
pub(super) struct SecondText {
    last: Mutex<Option<(i64, String)>>,
}

impl SecondText {
    pub(super) fn of(&self, now: Timestamp) -> String {
        let second = now.as_second();
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((s, text)) = last.as_ref()
            && *s == second
        {
            return text.clone();
        }
        let text = k8s_openapi::jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", now)
            .unwrap_or_else(|_| now.to_string());
        *last = Some((second, text.clone()));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::framework::EventType;
    use k8s_openapi::api::core::v1::{Event as KubeEvent, EventSource, ObjectReference};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    /// The typed event the body stands for.
    fn typed(ev: &SchedEvent, r: &Reporter<'_>, now: Timestamp) -> KubeEvent {
        KubeEvent {
            metadata: ObjectMeta {
                name: Some(format!("{}.{:x}", ev.object.name, now.as_nanosecond())),
                namespace: Some(ev.object.namespace.clone().unwrap_or("default".into())),
                ..Default::default()
            },
            involved_object: ObjectReference {
                api_version: Some(api_version_of(&ev.object).to_string()),
                kind: Some(ev.object.kind.to_string()),
                name: Some(ev.object.name.clone()),
                namespace: ev.object.namespace.clone(),
                uid: (!ev.object.uid.is_empty()).then(|| ev.object.uid.clone()),
                ..Default::default()
            },
            type_: Some(ev.type_.as_str().to_string()),
            reason: Some(ev.reason.clone()),
            message: Some(super::super::truncate(&ev.message, 1000)),
            action: Some("Scheduling".into()),
            source: Some(EventSource {
                component: Some(r.component.to_string()),
                host: None,
            }),
            count: Some(1),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            reporting_component: Some(r.component.to_string()),
            reporting_instance: Some(r.instance.to_string()),
            ..Default::default()
        }
    }

    fn event(kind: &'static str, namespace: Option<&str>, uid: &str, message: &str) -> SchedEvent {
        SchedEvent {
            object: ObjectRef {
                kind,
                namespace: namespace.map(str::to_string),
                name: "obj-1".into(),
                uid: uid.into(),
            },
            type_: EventType::Normal,
            reason: "Scheduled".into(),
            message: message.into(),
        }
    }

    #[test]
    fn the_body_is_the_typed_event() {
        let r = Reporter {
            component: "volcano-rs",
            instance: "volcano-rs-0",
        };
        let now: Timestamp = "2026-12-07T22:59:58.123456789Z".parse().expect("timestamp");
        let long = "x".repeat(1500);
        for ev in [
            event(
                "Pod",
                Some("ns"),
                "u-1",
                "Successfully assigned ns/obj-1 to n1",
            ),
            event("PodGroup", Some("ns"), "", "pod group is ready"),
            event("Queue", None, "u-q", &long),
        ] {
            let text = SecondText::default().of(now);
            let namespace = ev.object.namespace.as_deref().unwrap_or("default");
            let body = event_body(&ev, namespace, &r, now, &text).expect("body");
            let got: serde_json::Value = serde_json::from_slice(&body).expect("json");
            let want = serde_json::to_value(typed(&ev, &r, now)).expect("typed json");
            assert_eq!(got, want, "{}", ev.object.kind);
        }
    }

    #[test]
    fn the_time_text_follows_the_second() {
        let t = SecondText::default();
        let a: Timestamp = "2026-12-07T22:59:58.9Z".parse().expect("timestamp");
        let b: Timestamp = "2026-12-07T22:59:59.0Z".parse().expect("timestamp");
        assert_eq!(t.of(a), "2026-12-07T22:59:58Z");
        assert_eq!(t.of(a), "2026-12-07T22:59:58Z");
        assert_eq!(t.of(b), "2026-12-07T22:59:59Z");
    }
}
